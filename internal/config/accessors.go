package config

import "fmt"

// MustInt32 returns the value of an Int key. It panics when name is not a
// known Int key: a programming error, not a user's.
func (c *Config) MustInt32(name string) int32 {
	v, ok := c.values[name].(int32)
	if !ok {
		panic(fmt.Sprintf("config: %s is not a known int key", name))
	}
	return v
}

// MustInt64 returns the value of a Long key; it panics like MustInt32.
func (c *Config) MustInt64(name string) int64 {
	v, ok := c.values[name].(int64)
	if !ok {
		panic(fmt.Sprintf("config: %s is not a known long key", name))
	}
	return v
}

// MustBool returns the value of a Boolean key; it panics like MustInt32.
func (c *Config) MustBool(name string) bool {
	v, ok := c.values[name].(bool)
	if !ok {
		panic(fmt.Sprintf("config: %s is not a known boolean key", name))
	}
	return v
}
