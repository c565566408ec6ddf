package registry

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// contentType is Confluent's response type; requests may also send
// application/json or application/octet-stream.
const contentType = "application/vnd.schemaregistry.v1+json"

// Handler returns the REST API.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, f func(*http.Request) (any, *Error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
			v, err := f(req)
			if err != nil && err.forwarded != nil {
				w.Header().Set("Content-Type", contentType)
				w.WriteHeader(err.Status)
				_, _ = w.Write(err.forwarded)
				return
			}
			if err != nil {
				write(w, err.Status, map[string]any{"error_code": err.Code, "message": err.Message})
				return
			}
			if _, ok := v.(noContent); ok {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			if s, ok := v.(rawSchema); ok {
				w.Header().Set("Content-Type", contentType)
				_, _ = io.WriteString(w, string(s))
				return
			}
			write(w, http.StatusOK, v)
		})
	}
	// hw serves a write: on the leader, or forwarded to it.
	hw := func(pattern string, f func(*http.Request) (any, *Error)) {
		h(pattern, func(req *http.Request) (any, *Error) {
			if err := r.forwardIfFollower(req); err != nil {
				return nil, err
			}
			return f(req)
		})
	}
	h("GET /{$}", func(*http.Request) (any, *Error) { return map[string]any{}, nil })
	h("GET /schemas/types", func(*http.Request) (any, *Error) { return []string{typeJSON, typeProtobuf, typeAvro}, nil })
	h("GET /schemas", r.getSchemas)
	h("GET /schemas/ids/{id}", r.getSchemaByID)
	h("GET /schemas/ids/{id}/schema", r.getSchemaTextByID)
	h("GET /schemas/ids/{id}/subjects", r.getSubjectsByID)
	h("GET /schemas/ids/{id}/versions", r.getVersionsByID)
	h("GET /subjects", r.getSubjects)
	h("POST /subjects/{subject}", r.postLookup)
	hw("DELETE /subjects/{subject}", r.deleteSubjectHandler)
	h("GET /subjects/{subject}/versions", r.getVersions)
	hw("POST /subjects/{subject}/versions", r.postRegister)
	h("GET /subjects/{subject}/versions/{version}", r.getVersion)
	h("GET /subjects/{subject}/versions/{version}/schema", r.getVersionSchema)
	h("GET /subjects/{subject}/versions/{version}/referencedby", r.getReferencedBy)
	hw("DELETE /subjects/{subject}/versions/{version}", r.deleteVersionHandler)
	h("POST /compatibility/subjects/{subject}/versions/{version}", r.postCompat)
	h("POST /compatibility/subjects/{subject}/versions", r.postCompat)
	h("GET /config", r.getConfig)
	hw("PUT /config", r.putConfig)
	hw("DELETE /config", r.deleteConfig)
	h("GET /config/{subject}", r.getConfig)
	hw("PUT /config/{subject}", r.putConfig)
	hw("DELETE /config/{subject}", r.deleteConfig)
	h("GET /mode", r.getMode)
	hw("PUT /mode", r.putMode)
	hw("DELETE /mode", r.deleteMode)
	h("GET /mode/{subject}", r.getMode)
	hw("PUT /mode/{subject}", r.putMode)
	hw("DELETE /mode/{subject}", r.deleteMode)
	h("GET /contexts", r.getContexts)
	hw("DELETE /contexts/{context}", r.deleteContext)
	var api http.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, pattern := mux.Handler(req); pattern != "" {
			mux.ServeHTTP(w, req)
			return
		}
		// No route: a known path with another method, or an unknown
		// path, answered in JSON as Confluent does.
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			other := req.Clone(req.Context())
			other.Method = m
			if _, pattern := mux.Handler(other); pattern != "" {
				write(w, http.StatusMethodNotAllowed, map[string]any{"error_code": 405, "message": "HTTP 405 Method Not Allowed"})
				return
			}
		}
		write(w, http.StatusNotFound, map[string]any{"error_code": 404, "message": "HTTP 404 Not Found"})
	})
	api = contextFilter(api)
	if r.cfg.Auth != nil {
		api = wrapAuth(r.cfg.Auth, api)
	}
	return api
}

// noContent is an empty 204 answer.
type noContent struct{}

// rawSchema is a response written as is: the schema text endpoints.
type rawSchema string

func write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func flag(req *http.Request, name string) bool {
	v, _ := strconv.ParseBool(req.URL.Query().Get(name))
	return v
}

// subjectOf reads and checks the {subject} path segment, a subject
// qualified with the default context becoming the unqualified name.
func subjectOf(req *http.Request) (string, *Error) {
	s := req.PathValue("subject")
	if !validSubject(s, false) {
		return "", invalidSubject(s)
	}
	return canonicalSubject(s), nil
}

// decode reads a JSON body into v, ignoring unknown fields. A body
// larger than a schema can be is refused as too large.
func (r *Registry) decode(req *http.Request, v any) *Error {
	body, err := io.ReadAll(http.MaxBytesReader(nil, req.Body, r.bodyLimit()))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return errf(http.StatusUnprocessableEntity, 42209, "Register operation failed because schema is too large")
		}
		return errf(http.StatusBadRequest, 400, "%v", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errf(http.StatusBadRequest, 400, "Unrecognized request body: %v", err)
	}
	return nil
}

// bodyLimit is the largest request body read: a schema of the largest
// size, escaped, with room for the other fields.
func (r *Registry) bodyLimit() int64 { return int64(r.cfg.MaxSchemaBytes)*2 + 64<<10 }

// schemaResponse is a version as the API shows it.
type schemaResponse struct {
	Subject    string          `json:"subject,omitempty"`
	Version    int             `json:"version,omitempty"`
	ID         int             `json:"id,omitempty"`
	SchemaType string          `json:"schemaType,omitempty"`
	References []Reference     `json:"references,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
	Schema     string          `json:"schema"`
	Deleted    bool            `json:"deleted,omitempty"`
}

func showVersion(v *version) schemaResponse {
	out := schemaResponse{Subject: v.Subject, Version: v.Version, ID: v.ID, References: v.References,
		Metadata: v.Metadata, RuleSet: v.RuleSet, Schema: v.Schema}
	if v.SchemaType != typeAvro {
		out.SchemaType = v.SchemaType
	}
	return out
}

// idOf resolves the {id} path segment in the context of the subject
// query parameter (the default context without one), as Confluent does:
// an id asked for with a qualified subject must be one of that subject's
// versions (or, for a context alone, any schema of the context); with an
// unqualified subject the default context is tried first, then the
// subject of that name in each context, then any schema of the default
// context.
func (r *Registry) idOf(req *http.Request) (schemaDef, idKey, *Error) {
	if _, err := r.ready(req.Context()); err != nil {
		return schemaDef{}, idKey{}, err
	}
	id, err := strconv.Atoi(req.PathValue("id"))
	if err != nil {
		return schemaDef{}, idKey{}, errf(http.StatusNotFound, 40403, "Schema %s not found", req.PathValue("id"))
	}
	subject := canonicalSubject(req.URL.Query().Get("subject"))
	ctx, name := splitSubject(subject)
	usedBy := func(ctx, subject string) bool {
		for _, v := range r.st.usesOf(ctx, id, true) {
			if v.Subject == subject {
				return true
			}
		}
		return false
	}
	found := false
	switch {
	case name == "":
		_, found = r.st.schemaByID(ctx, id)
	case ctx != defaultContext:
		found = usedBy(ctx, subject)
	default:
		found = usedBy(ctx, subject)
		for _, c := range r.st.contextNames() {
			if !found && c != defaultContext && usedBy(c, qualify(c, name)) {
				ctx, found = c, true
			}
		}
		if !found {
			_, found = r.st.schemaByID(ctx, id)
		}
	}
	k := idKey{ctx, id}
	d, ok := r.st.schemaByID(ctx, id)
	if !found || !ok {
		return d, k, errf(http.StatusNotFound, 40403, "Schema %d not found", id)
	}
	return d, k, nil
}

func (r *Registry) getSchemaByID(req *http.Request) (any, *Error) {
	d, id, err := r.idOf(req)
	if err != nil {
		return nil, err
	}
	out := schemaResponse{Schema: r.formatSchema(req, id.ctx, d.SchemaType, d.Schema, d.References), References: d.References}
	if d.SchemaType != typeAvro {
		out.SchemaType = d.SchemaType
	}
	if flag(req, "fetchMaxId") {
		return struct {
			schemaResponse
			MaxID int `json:"maxId"`
		}{out, max(id.id, r.st.nextID(id.ctx)-1)}, nil
	}
	return out, nil
}

func (r *Registry) getSchemaTextByID(req *http.Request) (any, *Error) {
	d, _, err := r.idOf(req)
	if err != nil {
		return nil, err
	}
	return rawSchema(d.Schema), nil
}

func (r *Registry) getSubjectsByID(req *http.Request) (any, *Error) {
	_, id, err := r.idOf(req)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, v := range r.st.usesOf(id.ctx, id.id, flag(req, "deleted")) {
		if len(out) == 0 || out[len(out)-1] != v.Subject {
			out = append(out, v.Subject)
		}
	}
	return out, nil
}

func (r *Registry) getVersionsByID(req *http.Request) (any, *Error) {
	_, id, err := r.idOf(req)
	if err != nil {
		return nil, err
	}
	type subjectVersion struct {
		Subject string `json:"subject"`
		Version int    `json:"version"`
	}
	out := []subjectVersion{}
	for _, v := range r.st.usesOf(id.ctx, id.id, flag(req, "deleted")) {
		out = append(out, subjectVersion{v.Subject, v.Version})
	}
	return out, nil
}

// getSchemas lists versions: every one, or the latest of each subject
// with latestOnly; subjectPrefix filters.
func (r *Registry) getSchemas(req *http.Request) (any, *Error) {
	if _, err := r.ready(req.Context()); err != nil {
		return nil, err
	}
	deleted, latest := flag(req, "deleted"), flag(req, "latestOnly")
	out := []schemaResponse{}
	for _, s := range r.st.subjectNames(req.URL.Query().Get("subjectPrefix"), deleted) {
		vs := r.st.versions(s, deleted)
		if latest && len(vs) > 0 {
			vs = vs[len(vs)-1:]
		}
		for _, v := range vs {
			out = append(out, showVersion(v))
		}
	}
	return out, nil
}

func (r *Registry) getSubjects(req *http.Request) (any, *Error) {
	if _, err := r.ready(req.Context()); err != nil {
		return nil, err
	}
	// Without a prefix, the subjects of every context.
	prefix := ":*:"
	if q := req.URL.Query(); q.Has("subjectPrefix") {
		prefix = q.Get("subjectPrefix")
	}
	out := r.st.subjectNames(prefix, flag(req, "deleted"))
	if out == nil {
		out = []string{}
	}
	return out, nil
}

func (r *Registry) getVersions(req *http.Request) (any, *Error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	if _, err := r.ready(req.Context()); err != nil {
		return nil, err
	}
	vs := r.st.versions(subject, flag(req, "deleted"))
	if len(vs) == 0 {
		return nil, subjectNotFound(subject)
	}
	out := []int{}
	for _, v := range vs {
		out = append(out, v.Version)
	}
	return out, nil
}

// versionOf resolves the {subject} and {version} path segments.
func (r *Registry) versionOf(req *http.Request) (*version, *Error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	ver, err := parseVersion(req.PathValue("version"))
	if err != nil {
		return nil, err
	}
	if _, err := r.ready(req.Context()); err != nil {
		return nil, err
	}
	return r.version(subject, ver, flag(req, "deleted"))
}

func (r *Registry) getVersion(req *http.Request) (any, *Error) {
	v, err := r.versionOf(req)
	if err != nil {
		return nil, err
	}
	out := showVersion(v)
	out.Schema = r.formatSchema(req, contextOf(v.Subject), v.SchemaType, v.Schema, v.References)
	return out, nil
}

func (r *Registry) getVersionSchema(req *http.Request) (any, *Error) {
	v, err := r.versionOf(req)
	if err != nil {
		return nil, err
	}
	return rawSchema(v.Schema), nil
}

func (r *Registry) getReferencedBy(req *http.Request) (any, *Error) {
	v, err := r.versionOf(req)
	if err != nil {
		return nil, err
	}
	out := r.st.referencedBy(v.Subject, v.Version)
	if out == nil {
		out = []int{}
	}
	return out, nil
}

func (r *Registry) postRegister(req *http.Request) (any, *Error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	var body schemaRequest
	if err := r.decode(req, &body); err != nil {
		return nil, err
	}
	body.normalize = flag(req, "normalize")
	id, err := r.register(req.Context(), subject, body)
	if err != nil {
		return nil, err
	}
	return map[string]int{"id": id}, nil
}

func (r *Registry) postLookup(req *http.Request) (any, *Error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	var body schemaRequest
	if err := r.decode(req, &body); err != nil {
		return nil, err
	}
	body.normalize = flag(req, "normalize")
	v, err := r.lookup(req.Context(), subject, body, flag(req, "deleted"))
	if err != nil {
		return nil, err
	}
	return showVersion(v), nil
}

func (r *Registry) deleteSubjectHandler(req *http.Request) (any, *Error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	return r.deleteSubject(req.Context(), subject, flag(req, "permanent"))
}

func (r *Registry) deleteVersionHandler(req *http.Request) (any, *Error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	ver, err := parseVersion(req.PathValue("version"))
	if err != nil {
		return nil, err
	}
	return r.deleteVersion(req.Context(), subject, ver, flag(req, "permanent"))
}

func (r *Registry) postCompat(req *http.Request) (any, *Error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	ver := 0
	if s := req.PathValue("version"); s != "" {
		if ver, err = parseVersion(s); err != nil {
			return nil, err
		}
	}
	var body schemaRequest
	if err := r.decode(req, &body); err != nil {
		return nil, err
	}
	body.normalize = flag(req, "normalize")
	msgs, err := r.checkCompat(req.Context(), subject, ver, body)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"is_compatible": len(msgs) == 0}
	if flag(req, "verbose") {
		if msgs == nil {
			msgs = []string{}
		}
		out["messages"] = msgs
	}
	return out, nil
}

// optSubject reads the optional {subject} of /config and /mode: "" is
// the global setting, ":.ctx:" a context's.
func optSubject(req *http.Request) (string, *Error) {
	s := req.PathValue("subject")
	if s == "" {
		return "", nil
	}
	if !validSubject(s, true) {
		return "", invalidSubject(s)
	}
	return canonicalSubject(s), nil
}

func (r *Registry) getConfig(req *http.Request) (any, *Error) {
	subject, err := optSubject(req)
	if err != nil {
		return nil, err
	}
	if _, err := r.ready(req.Context()); err != nil {
		return nil, err
	}
	_, ok := r.st.configOf(subject)
	normalize, hasNormalize := r.st.normalizeOf(subject)
	if !ok && !hasNormalize {
		if subject != "" && !flag(req, "defaultToGlobal") {
			return nil, errf(http.StatusNotFound, 40408, "Subject '%s' does not have subject-level compatibility configured", subject)
		}
		ok = true
		for _, s := range scopes(subject)[1:] {
			if normalize, hasNormalize = r.st.normalizeOf(s); hasNormalize {
				break
			}
		}
	}
	out := map[string]any{}
	if ok || subject == "" {
		out["compatibilityLevel"] = r.levelOf(subject)
	}
	if hasNormalize {
		out["normalize"] = normalize
	}
	return out, nil
}

func (r *Registry) putConfig(req *http.Request) (any, *Error) {
	subject, err := optSubject(req)
	if err != nil {
		return nil, err
	}
	var body struct {
		Compatibility string `json:"compatibility"`
		Normalize     *bool  `json:"normalize"`
	}
	if err := r.decode(req, &body); err != nil {
		return nil, err
	}
	if body.Compatibility == "" && body.Normalize == nil {
		return nil, errf(http.StatusUnprocessableEntity, 42203,
			"Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")
	}
	if _, err := r.setConfig(req.Context(), subject, body.Compatibility, body.Normalize); err != nil {
		return nil, err
	}
	out := map[string]any{}
	if body.Compatibility != "" {
		out["compatibility"] = r.levelOf(subject)
	}
	if body.Normalize != nil {
		out["normalize"] = *body.Normalize
	}
	return out, nil
}

func (r *Registry) deleteConfig(req *http.Request) (any, *Error) {
	subject, err := optSubject(req)
	if err != nil {
		return nil, err
	}
	if _, err := r.ready(req.Context()); err != nil {
		return nil, err
	}
	if subject != "" && len(r.st.allVersions(subject)) == 0 {
		if _, ok := r.st.configOf(subject); !ok {
			return nil, subjectNotFound(subject)
		}
	}
	prev, err := r.setConfig(req.Context(), subject, "", nil)
	if err != nil {
		return nil, err
	}
	return map[string]string{"compatibilityLevel": prev}, nil
}

func (r *Registry) getMode(req *http.Request) (any, *Error) {
	subject, err := optSubject(req)
	if err != nil {
		return nil, err
	}
	if _, err := r.ready(req.Context()); err != nil {
		return nil, err
	}
	mode, ok := r.st.modeOf(subject)
	if !ok {
		if subject != "" && !flag(req, "defaultToGlobal") {
			return nil, errf(http.StatusNotFound, 40409, "Subject '%s' does not have subject-level mode configured", subject)
		}
		mode = r.modeOf("")
	}
	return map[string]string{"mode": mode}, nil
}

func (r *Registry) putMode(req *http.Request) (any, *Error) {
	subject, err := optSubject(req)
	if err != nil {
		return nil, err
	}
	var body struct {
		Mode string `json:"mode"`
	}
	if err := r.decode(req, &body); err != nil {
		return nil, err
	}
	if body.Mode == "" {
		return nil, errf(http.StatusUnprocessableEntity, 42204,
			"Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE, IMPORT")
	}
	if _, err := r.setMode(req.Context(), subject, body.Mode, flag(req, "force")); err != nil {
		return nil, err
	}
	return map[string]string{"mode": r.modeOf(subject)}, nil
}

func (r *Registry) deleteMode(req *http.Request) (any, *Error) {
	subject, err := optSubject(req)
	if err != nil {
		return nil, err
	}
	prev, err := r.setMode(req.Context(), subject, "", false)
	if err != nil {
		return nil, err
	}
	return map[string]string{"mode": prev}, nil
}

func (r *Registry) getContexts(req *http.Request) (any, *Error) {
	if _, err := r.ready(req.Context()); err != nil {
		return nil, err
	}
	out := []string{}
	for _, c := range r.st.contextNames() {
		if strings.HasPrefix(c, req.URL.Query().Get("contextPrefix")) {
			out = append(out, c)
		}
	}
	return out, nil
}

// deleteContext removes an empty context: 42211 while any subject of it
// has a version, even a soft-deleted one.
func (r *Registry) deleteContext(req *http.Request) (any, *Error) {
	l, rerr := r.ready(req.Context())
	if rerr != nil {
		return nil, rerr
	}
	ctx, ok := normalizeContextName(req.PathValue("context"))
	if !ok {
		return nil, errf(http.StatusBadRequest, 400, "Context name '%s' cannot contain a colon", req.PathValue("context"))
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if !r.st.contextEmpty(ctx) {
		return nil, errf(http.StatusUnprocessableEntity, 42211, "The specified context '%s' is not empty.", req.PathValue("context"))
	}
	if ctx == defaultContext {
		return noContent{}, nil
	}
	if err := r.put(req.Context(), l, contextKey(ctx), nil); err != nil {
		return nil, err
	}
	return noContent{}, nil
}
