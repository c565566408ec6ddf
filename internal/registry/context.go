package registry

import (
	"net/http"
	"net/url"
	"strings"
)

// Contexts, as Confluent Schema Registry has them: a subject may be
// qualified with a context, ":.ctx:subject"; an unqualified subject lives
// in the default context ".". Each context has its own schema ids (the
// default context keeps the ids it always had), its own subjects, and a
// context-level config and mode under the subject ":.ctx:". A context
// other than the default is recorded in _schemas by a CONTEXT record the
// first time a schema is registered in it; GET /contexts lists them.
//
// Every API also takes a /contexts/{context} path prefix: the subject in
// the rest of the path (and the subject or subjectPrefix query
// parameter) is then qualified with that context unless it names one.

const (
	defaultContext = "."
	defaultTenant  = "default"
	globalContext  = ".__GLOBAL"
)

// splitSubject returns the context and the unqualified name of a
// subject: ":.ctx:name" is (".ctx", "name"), ":.ctx:" or ":.ctx" is
// (".ctx", ""), anything else is (".", subject).
func splitSubject(s string) (ctx, name string) {
	if !strings.HasPrefix(s, ":.") {
		return defaultContext, s
	}
	if i := strings.IndexByte(s[2:], ':'); i >= 0 {
		return s[1 : i+2], s[i+3:]
	}
	return s[1:], ""
}

// contextOf is the context a subject lives in.
func contextOf(subject string) string {
	ctx, _ := splitSubject(subject)
	return ctx
}

// qualify names a subject of a context: the default context leaves the
// name unqualified.
func qualify(ctx, name string) string {
	if ctx == defaultContext || ctx == "" {
		return name
	}
	return ":" + ctx + ":" + name
}

// canonicalSubject writes a subject as it is stored: a subject qualified
// with the default context (":.:name") is the unqualified name.
func canonicalSubject(s string) string {
	ctx, name := splitSubject(s)
	return qualify(ctx, name)
}

// refSubject is the subject a reference names from a schema of context
// ctx: a qualified subject as it is, an unqualified one in ctx (Confluent
// qualifies a reference with its referrer's context the same way).
func refSubject(ctx, subject string) string {
	if hasContext(subject) {
		return canonicalSubject(subject)
	}
	return qualify(ctx, subject)
}

// contextPrefix is the qualifier of a context: ":.ctx:", or "" for the
// default context.
func contextPrefix(ctx string) string { return qualify(ctx, "") }

// normalizeContextName reads a context as a URL names it: "ctx",
// ".ctx", ":.ctx:" all name ".ctx". A colon inside is refused.
func normalizeContextName(s string) (string, bool) {
	s = strings.TrimPrefix(s, ":")
	s = strings.TrimSuffix(s, ":")
	if strings.Contains(s, ":") {
		return "", false
	}
	if !strings.HasPrefix(s, ".") {
		s = "." + s
	}
	return s, true
}

// hasContext reports whether a subject or prefix names its context
// (":.ctx:..." or the wildcard ":*:...").
func hasContext(s string) bool {
	return strings.HasPrefix(s, ":.") || strings.HasPrefix(s, ":*:")
}

// contextKey and contextValue are the CONTEXT record of a context.
func contextKey(ctx string) recordKey {
	return recordKey{KeyType: keyContext, Tenant: defaultTenant, Context: ctx}
}

// rewriteContextPath turns a request under /contexts/{context}/ into the
// request it stands for, as Confluent's context filter does: the subject
// after "subjects" (or after a leading "config" or "mode") is qualified
// with the context unless it names one; a bare /config or /mode becomes
// the context's own setting; the subject query parameter of /schemas/ids
// and the subjectPrefix of /schemas and /subjects are qualified too.
// /contexts and /contexts/{context} alone are left as they are. ok is
// false when the context's name is invalid.
func rewriteContextPath(u *url.URL) (ok bool) {
	path := strings.TrimPrefix(u.Path, "/")
	if !strings.HasPrefix(path, "contexts/") {
		return true
	}
	segs := strings.Split(strings.TrimSuffix(path, "/"), "/")
	if len(segs) <= 2 {
		return true
	}
	ctx, ok := normalizeContextName(segs[1])
	if !ok {
		return false
	}
	prefix := contextPrefix(ctx)
	rest := segs[2:]
	out := make([]string, 0, len(rest)+1)
	qualifyNext, configOrMode := false, false
	for i, seg := range rest {
		switch {
		case qualifyNext:
			if !hasContext(seg) {
				seg = prefix + seg
			}
			qualifyNext = false
		case seg == "subjects":
			qualifyNext = true
		case i == 0 && (seg == "config" || seg == "mode"):
			qualifyNext, configOrMode = true, true
		}
		out = append(out, seg)
	}
	if configOrMode && qualifyNext && prefix != "" {
		out = append(out, prefix)
	}
	u.Path = "/" + strings.Join(out, "/")
	u.RawPath = ""
	q := u.Query()
	switch p := strings.Join(out, "/"); {
	case strings.HasPrefix(p, "schemas/ids"):
		if s := q.Get("subject"); !hasContext(s) {
			q.Set("subject", prefix+s)
		}
	case p == "schemas" || p == "subjects":
		prefixes := q["subjectPrefix"]
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		for i, s := range prefixes {
			if !hasContext(s) {
				prefixes[i] = prefix + s
			}
		}
		q["subjectPrefix"] = prefixes
	}
	u.RawQuery = q.Encode()
	return true
}

// contextFilter applies rewriteContextPath before the routes see the
// request.
func contextFilter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/contexts/") {
			u := *req.URL
			if !rewriteContextPath(&u) {
				name, _, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/contexts/"), "/")
				write(w, http.StatusBadRequest, map[string]any{"error_code": 400,
					"message": "Context name '" + strings.Trim(name, ":") + "' cannot contain a colon"})
				return
			}
			req = req.Clone(req.Context())
			req.URL = &u
			req.RequestURI = u.RequestURI()
		}
		next.ServeHTTP(w, req)
	})
}

// subjectMatches applies a subjectPrefix as Confluent does: ":*:" alone
// matches every subject of every context, ":*:p" the subjects of any
// context whose unqualified name starts with p, and any other prefix the
// subject's qualified name.
func subjectMatches(subject, prefix string) bool {
	if rest, ok := strings.CutPrefix(prefix, ":*:"); ok {
		_, name := splitSubject(subject)
		return strings.HasPrefix(name, rest)
	}
	return strings.HasPrefix(subject, prefix)
}
