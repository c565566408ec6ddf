package main

// `samsa rest-proxy --config kafka-rest.properties` reads the properties
// file of Confluent's REST Proxy, with Confluent's key names, so that a
// deployment's file starts Samsa's proxy unchanged. Flags given on the
// command line win over the file.

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/security"
)

// restProxyFile is what a kafka-rest.properties file sets.
type restProxyFile struct {
	flags map[string]string // flag name → value, for flags not given
	// client is the proxy's Kafka client (client.* keys); nil when the
	// file has none.
	client *securityConfig
	// listenerTLS is the https listeners' key store (ssl.* keys).
	listenerTLS *security.TLSSettings
	propagate   bool
	ignored     []string
}

// readRestProxyFile reads path. Keys the proxy has no use for (producer.*,
// consumer.* tuning, Jetty settings) are returned in ignored; a value it
// cannot use is an error naming the key.
func readRestProxyFile(path string) (*restProxyFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	props, err := config.ParseProperties(string(data))
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	f := &restProxyFile{flags: map[string]string{}}
	protocol, jaas, sawClient := "PLAINTEXT", "", false
	client := &securityConfig{tls: security.TLSSettings{EndpointIdentificationAlgorithm: "https"}}
	var listenerTLS security.TLSSettings
	sawListenerTLS := false
	bad := func(p config.Property, format string, args ...any) error {
		return fmt.Errorf("--config %s line %d: %s: %s", path, p.Line, p.Key, fmt.Sprintf(format, args...))
	}
	for _, p := range props {
		v := strings.TrimSpace(p.Value)
		switch key := p.Key; {
		case key == "bootstrap.servers":
			var seeds []string
			for s := range strings.SplitSeq(v, ",") {
				// Confluent allows PROTOCOL://host:port.
				if _, hp, ok := strings.Cut(strings.TrimSpace(s), "://"); ok {
					s = hp
				}
				if s = strings.TrimSpace(s); s != "" {
					seeds = append(seeds, s)
				}
			}
			f.flags["bootstrap"] = strings.Join(seeds, ",")
		case key == "listeners":
			f.flags["listen"] = v
		case key == "schema.registry.url":
			f.flags["schema-registry-url"] = v
		case key == "schema.registry.basic.auth.user.info":
			f.flags["schema-registry-user-info"] = v
		case key == "basic.auth.credentials.source", key == "schema.registry.basic.auth.credentials.source":
			if v != "USER_INFO" {
				return nil, bad(p, "only USER_INFO is supported")
			}
		case key == "consumer.instance.timeout.ms":
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms <= 0 {
				return nil, bad(p, "want milliseconds, not %q", v)
			}
			f.flags["consumer-instance-timeout"] = (time.Duration(ms) * time.Millisecond).String()
		case key == "authentication.method":
			switch v {
			case "NONE":
			case "BASIC":
				f.flags["auth-basic"] = "true"
			default:
				return nil, bad(p, "want NONE or BASIC, not %q", v)
			}
		case key == "authentication.realm":
			f.flags["realm"] = v
		case key == "authentication.roles":
			f.flags["roles"] = v
		case key == "authentication.users.file": // Samsa's: Confluent names the file in a JAAS file
			f.flags["users-file"] = v
		case key == "confluent.rest.auth.propagate.method":
			switch v {
			case "JETTY_AUTH":
				f.propagate = true
			default:
				return nil, bad(p, "only JETTY_AUTH (basic authentication) is supported, not %q", v)
			}
		case key == "client.security.protocol":
			protocol, sawClient = strings.ToUpper(v), true
			switch protocol {
			case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
			default:
				return nil, bad(p, "want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, not %q", v)
			}
		case key == "client.sasl.mechanism":
			client.mechanism, sawClient = v, true
		case key == "client.sasl.jaas.config":
			jaas, sawClient = p.Value, true
		case strings.HasPrefix(key, "client.ssl."):
			sawClient = true
			if !setSSLProperty(&client.tls, strings.TrimPrefix(key, "client."), p.Value) && !ignoredClientKeys[strings.TrimPrefix(key, "client.")] {
				return nil, bad(p, "not a client ssl.* key Samsa reads")
			}
		case strings.HasPrefix(key, "ssl."):
			if key == "ssl.client.auth" {
				listenerTLS.ClientAuth = v
			} else if !setSSLProperty(&listenerTLS, key, p.Value) {
				f.ignored = append(f.ignored, key)
				continue
			}
			sawListenerTLS = true
		default:
			f.ignored = append(f.ignored, key)
		}
	}
	if sawClient {
		if client.tls.TruststoreType == "" {
			client.tls.TruststoreType = security.StoreJKS
		}
		if client.tls.KeystoreType == "" {
			client.tls.KeystoreType = security.StoreJKS
		}
		client.useTLS = protocol == "SSL" || protocol == "SASL_SSL"
		if f.propagate {
			// Each user logs in as itself with client.sasl.mechanism.
			if protocol != "SASL_PLAINTEXT" && protocol != "SASL_SSL" || client.mechanism == "" {
				return nil, fmt.Errorf("--config %s: confluent.rest.auth.propagate.method=JETTY_AUTH needs client.security.protocol SASL_PLAINTEXT or SASL_SSL and client.sasl.mechanism", path)
			}
			f.flags["propagate-principal"] = client.mechanism
			client.mechanism = ""
		} else {
			if err := client.saslProperties(protocol, jaas); err != nil {
				return nil, fmt.Errorf("--config %s: client.%w", path, err)
			}
			if err := client.check(); err != nil {
				return nil, fmt.Errorf("--config %s: %w", path, err)
			}
		}
		f.client = client
	} else if f.propagate {
		return nil, fmt.Errorf("--config %s: confluent.rest.auth.propagate.method=JETTY_AUTH needs client.security.protocol SASL_PLAINTEXT or SASL_SSL", path)
	}
	if sawListenerTLS {
		if listenerTLS.KeystoreType == "" {
			listenerTLS.KeystoreType = security.StoreJKS
		}
		if listenerTLS.TruststoreType == "" {
			listenerTLS.TruststoreType = security.StoreJKS
		}
		f.listenerTLS = &listenerTLS
	}
	return f, nil
}

// apply sets every flag the file names that the command line did not.
func (f *restProxyFile) apply(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	for name, v := range f.flags {
		if name == "auth-basic" || given[name] || name == "users-file" && f.flags["auth-basic"] != "true" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("--config: %s: %w", name, err)
		}
	}
	if f.flags["auth-basic"] == "true" && !given["users-file"] && f.flags["users-file"] == "" {
		return errors.New("--config: authentication.method=BASIC needs the users file: --users-file (or authentication.users.file)")
	}
	return nil
}
