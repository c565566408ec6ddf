package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/security"
)

// nodeMechanism is the SASL mechanism a service of `samsa server` (the
// registry, the REST proxy) logs in with on one of the node's listeners
// when none is configured: the inter-broker mechanism if the listener
// enables it, else the first PLAIN or SCRAM mechanism it enables. setting
// is the key that would choose one, named in the error.
func nodeMechanism(cfg *config.Config, listener, setting string) (string, error) {
	sl, err := cfg.SASLListener(listener)
	if err != nil {
		return "", err
	}
	for _, m := range append([]string{cfg.SASLMechanismInterBrokerProtocol}, saslMechanisms...) {
		if slices.Contains(saslMechanisms, m) && slices.Contains(sl.Mechanisms, m) {
			return m, nil
		}
	}
	return "", fmt.Errorf("listener %s enables none of %s: set %s", listener, strings.Join(saslMechanisms, ", "), setting)
}

// nodeCredentials is the username and password such a service logs in
// with: from jaas, its own JAAS config (the key jaasSetting), or, when that
// is empty, from the listener's JAAS config for the mechanism, the node's
// own credentials. who names the service in errors.
func nodeCredentials(cfg *config.Config, listener, mechanism, jaas, jaasSetting, who string) (user, pass string, err error) {
	jaasKey := jaasSetting
	if jaas == "" {
		jaasKey = config.JAASKey(listener, mechanism)
		var ok bool
		if jaas, ok = cfg.ListenerJAAS(listener, mechanism); !ok {
			return "", "", fmt.Errorf("listener %s needs SASL %s: set %s, or username and password in %s", listener, mechanism, jaasSetting, jaasKey)
		}
	}
	module := security.PlainLoginModule
	if mechanism != security.MechanismPlain {
		module = security.ScramLoginModule
	}
	mod, err := security.ParseJAASModule(jaas, module)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", jaasKey, err)
	}
	user, pass = mod.Options["username"], mod.Options["password"]
	if user == "" || pass == "" {
		return "", "", fmt.Errorf("%s: %s logs in with its username and password options; set them", jaasKey, who)
	}
	return user, pass, nil
}
