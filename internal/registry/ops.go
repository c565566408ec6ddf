package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Compatibility levels and modes.
const (
	defaultLevel = "BACKWARD"
	defaultMode  = "READWRITE"
)

var levels = []string{"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"}

var modes = []string{"READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT"}

// schemaRequest is the body of register, lookup and compatibility
// requests. Unknown fields are ignored.
type schemaRequest struct {
	Schema     string          `json:"schema"`
	SchemaType string          `json:"schemaType,omitempty"`
	References []Reference     `json:"references,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
	ID         int             `json:"id,omitempty"`
	Version    int             `json:"version,omitempty"`

	normalize bool // normalize=true in the query (normalizeRequest)
}

// parsed is a checked schema and its identity.
type parsed struct {
	typ   string
	avro  *parsedAvro
	json  *parsedJSON
	proto *parsedProto
	key   string
}

// parse checks a schema of the default context.
func (r *Registry) parse(typ, text string, refs []Reference) (*parsed, *Error) {
	return r.parseIn(defaultContext, typ, text, refs)
}

// parseIn checks a schema of any type with its references, which name
// subjects of the schema's context ctx unless they are qualified.
func (r *Registry) parseIn(ctx, typ, text string, refs []Reference) (*parsed, *Error) {
	typ = typeOrAvro(typ)
	if len(text) > r.cfg.MaxSchemaBytes {
		return nil, errf(http.StatusUnprocessableEntity, 42209, "Register operation failed because schema is too large")
	}
	switch typ {
	case typeAvro:
	case typeJSON:
		return r.parseJSON(ctx, text, refs)
	case typeProtobuf:
		return r.parseProtobuf(ctx, text, refs)
	default:
		return nil, invalidSchema("Invalid schema type %s", typ)
	}
	texts, err := r.referencedTexts(ctx, refs, map[string]bool{})
	if err != nil {
		return nil, err
	}
	p, perr := parseAvro(text, texts)
	if perr != nil {
		return nil, invalidSchema("Invalid schema of type %s, details: %v", typ, perr)
	}
	refKey, _ := json.Marshal(refs)
	return &parsed{typ: typ, avro: p, key: typ + "\x00" + p.canonical + "\x00" + string(refKey)}, nil
}

// referencedTexts returns the texts of refs and of everything they
// reference, deepest first. A reference cycle or a missing reference is
// an invalid schema.
func (r *Registry) referencedTexts(ctx string, refs []Reference, visiting map[string]bool) ([]string, *Error) {
	var out []string
	for _, ref := range refs {
		if ref.Name == "" || ref.Subject == "" {
			return nil, invalidSchema("Invalid schema reference %s: name and subject are required", refString(ref))
		}
		v, err := r.version(refSubject(ctx, ref.Subject), ref.Version, false)
		if err != nil {
			return nil, invalidSchema("Invalid schema reference %s: %s", refString(ref), err.Message)
		}
		id := v.Subject + "\x00" + strconv.Itoa(v.Version)
		if visiting[id] {
			return nil, invalidSchema("Invalid schema reference %s: circular reference", refString(ref))
		}
		visiting[id] = true
		deeper, derr := r.referencedTexts(contextOf(v.Subject), v.References, visiting)
		delete(visiting, id)
		if derr != nil {
			return nil, derr
		}
		out = append(append(out, deeper...), v.Schema)
	}
	return out, nil
}

// pinReferences returns refs with each reference to "latest" (-1) made
// a reference to the latest version's number, as Confluent's registry
// resolves them before it checks or stores a schema: what a stored
// schema references does not move when the referenced subject evolves.
// A reference that resolves to nothing is left for parse to refuse.
func (r *Registry) pinReferences(ctx string, refs []Reference) []Reference {
	var out []Reference
	for i, ref := range refs {
		if ref.Version != -1 {
			continue
		}
		v, err := r.version(refSubject(ctx, ref.Subject), -1, false)
		if err != nil {
			continue
		}
		if out == nil {
			out = slices.Clone(refs)
		}
		out[i].Version = v.Version
	}
	if out == nil {
		return refs
	}
	return out
}

func refString(ref Reference) string {
	return fmt.Sprintf("{name=%s, subject=%s, version=%d}", ref.Name, ref.Subject, ref.Version)
}

// version finds a subject's version; ver <= 0 means the latest.
func (r *Registry) version(subject string, ver int, deleted bool) (*version, *Error) {
	vs := r.st.versions(subject, deleted)
	if len(vs) == 0 {
		return nil, subjectNotFound(subject)
	}
	if ver <= 0 {
		return vs[len(vs)-1], nil
	}
	for _, v := range vs {
		if v.Version == ver {
			return v, nil
		}
	}
	return nil, versionNotFound(ver)
}

// parseVersion reads a {version} path segment: "latest", -1, or 1..2^31-1.
func parseVersion(s string) (int, *Error) {
	if s == "latest" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v == 0 || v < -1 {
		return 0, invalidVersion(s)
	}
	return int(v), nil
}

// validSubject applies Confluent's rule: no control characters, an
// unqualified name that is not one of the reserved ones, and (but for
// config and mode) not in the global context. A context alone
// (":.ctx:") names the context's settings: valid only for config and mode.
func validSubject(s string, configOrMode bool) bool {
	if s == "" || strings.ContainsFunc(s, func(c rune) bool { return c < 0x20 || (c >= 0x7f && c <= 0x9f) }) {
		return false
	}
	ctx, name := splitSubject(s)
	if name == "__GLOBAL" || name == "__EMPTY" {
		return false
	}
	if configOrMode {
		return true
	}
	return name != "" && ctx != globalContext
}

func invalidSubject(s string) *Error {
	return errf(http.StatusUnprocessableEntity, 42208, "The specified subject '%s' is not a valid.", s)
}

// idForKey returns the id that names a schema identity in a context,
// indexing the ids registered since the last call.
func (r *Registry) idForKey(ctx, key string) (int, bool) {
	r.keysMu.Lock()
	defer r.keysMu.Unlock()
	for id := r.indexedTo[ctx] + 1; id < r.st.nextID(ctx); id++ {
		if d, ok := r.st.schemaByID(ctx, id); ok {
			if p, err := r.parseIn(ctx, d.SchemaType, d.Schema, d.References); err == nil {
				r.keyOfID[idKey{ctx, id}] = p.key
				if _, dup := r.idOfKey[ctx+"\x00"+p.key]; !dup {
					r.idOfKey[ctx+"\x00"+p.key] = id
				}
			}
		}
		r.indexedTo[ctx] = id
	}
	id, ok := r.idOfKey[ctx+"\x00"+key]
	if ok {
		if _, live := r.st.schemaByID(ctx, id); !live {
			delete(r.idOfKey, ctx+"\x00"+key)
			return 0, false
		}
	}
	return id, ok
}

// keyOfVersion is the identity of a stored version's schema.
func (r *Registry) keyOfVersion(v *version) string {
	r.keysMu.Lock()
	k, ok := r.keyOfID[idKey{contextOf(v.Subject), v.ID}]
	r.keysMu.Unlock()
	if ok {
		return k
	}
	p, err := r.parseIn(contextOf(v.Subject), v.SchemaType, v.Schema, v.References)
	if err != nil {
		return ""
	}
	return p.key
}

// scopes are the settings' keys that apply to a subject, nearest first:
// the subject's, its context's (":.ctx:", for a context other than the
// default) or the global one, then the global context's (":.__GLOBAL:").
func scopes(subject string) []string {
	out := []string{subject}
	if ctx := contextOf(subject); ctx != defaultContext {
		if subject != contextPrefix(ctx) {
			out = append(out, contextPrefix(ctx))
		}
	} else if subject != "" {
		out = append(out, "")
	}
	if g := contextPrefix(globalContext); subject != g {
		out = append(out, g)
	}
	return out
}

func (r *Registry) modeOf(subject string) string {
	for _, s := range scopes(subject) {
		if m, ok := r.st.modeOf(s); ok {
			return m
		}
	}
	return defaultMode
}

func (r *Registry) levelOf(subject string) string {
	for _, s := range scopes(subject) {
		if c, ok := r.st.configOf(s); ok {
			return c
		}
	}
	return defaultLevel
}

// register adds a schema to a subject, or returns the id of the version
// that already holds it.
func (r *Registry) register(reqCtx context.Context, subject string, req schemaRequest) (int, *Error) {
	l, rerr := r.ready(reqCtx)
	if rerr != nil {
		return 0, rerr
	}
	req.References = r.pinReferences(contextOf(subject), req.References)
	p, perr := r.parseIn(contextOf(subject), req.SchemaType, req.Schema, req.References)
	if perr == nil {
		p, req, perr = r.normalizeRequest(subject, p, req)
	}
	if perr != nil {
		return 0, perr
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	mode := r.modeOf(subject)
	if mode == "READONLY" || mode == "READONLY_OVERRIDE" {
		return 0, notPermitted("Subject %s is in read-only mode", subject)
	}
	if req.ID > 0 && mode != "IMPORT" {
		return 0, notPermitted("Subject %s is not in import mode", subject)
	}
	live := r.st.versions(subject, false)
	for _, v := range live {
		if r.keyOfVersion(v) == p.key && (req.ID <= 0 || req.ID == v.ID) {
			return v.ID, nil
		}
	}
	if mode != "IMPORT" {
		if msgs := r.compat(p, live, r.levelOf(subject)); len(msgs) > 0 {
			return 0, errf(http.StatusConflict, 409,
				"Schema being registered is incompatible with an earlier schema for subject \"%s\", details: [%s]",
				subject, strings.Join(msgs, ", "))
		}
	}
	ctx := contextOf(subject)
	id, known := r.idForKey(ctx, p.key)
	if req.ID > 0 {
		if _, taken := r.st.schemaByID(ctx, req.ID); taken && (!known || id != req.ID) {
			return 0, errf(http.StatusUnprocessableEntity, 42207,
				"Overwrite new schema with id %d is not permitted.", req.ID)
		}
		id = req.ID
	} else if !known {
		id = r.st.nextID(ctx)
	}
	if !r.st.hasContext(ctx) {
		if err := r.put(reqCtx, l, contextKey(ctx), contextValue{Tenant: defaultTenant, Context: ctx}); err != nil {
			return 0, err
		}
	}
	ver := 1
	if all := r.st.allVersions(subject); len(all) > 0 {
		ver = all[len(all)-1].Version + 1
	}
	if req.Version > 0 {
		ver = req.Version
	}
	val := schemaValue{Subject: subject, Version: ver, ID: id, References: req.References,
		Metadata: req.Metadata, RuleSet: req.RuleSet, Schema: r.storedSchema(ctx, p, req.Schema, req.References)}
	if p.typ != typeAvro {
		val.SchemaType = p.typ
	}
	if err := r.put(reqCtx, l, schemaKey(subject, ver), val); err != nil {
		return 0, err
	}
	return id, nil
}

// put writes one record (a nil value is a tombstone).
func (r *Registry) put(ctx context.Context, l *topicLog, k recordKey, v any) *Error {
	key, val, err := encodeRecord(k, v)
	if err == nil {
		err = l.write(ctx, &kgo.Record{Key: key, Value: val})
	}
	if err != nil {
		return storeError(err)
	}
	return nil
}

// compat checks p against the versions the level names (the latest, or
// all for a transitive level) and returns what broke.
func (r *Registry) compat(p *parsed, against []*version, level string) []string {
	if level == "NONE" || len(against) == 0 {
		return nil
	}
	if !strings.HasSuffix(level, "_TRANSITIVE") {
		against = against[len(against)-1:]
	}
	base := strings.TrimSuffix(level, "_TRANSITIVE")
	var msgs []string
	for i := len(against) - 1; i >= 0; i-- {
		v := against[i]
		old, err := r.parseIn(contextOf(v.Subject), v.SchemaType, v.Schema, v.References)
		if err != nil || old.typ != p.typ {
			msgs = append(msgs, fmt.Sprintf("Incompatible schema type: version %d is %s", v.Version, v.SchemaType))
			continue
		}
		if p.typ == typeProtobuf {
			msgs = append(msgs, protobufCompat(old.proto, p.proto, base, v, level)...)
			continue
		}
		if p.typ == typeJSON {
			msgs = append(msgs, jsonCompatMessages(old.json, p.json, base, v, level)...)
			continue
		}
		var found []string
		if base == "BACKWARD" || base == "FULL" {
			found = append(found, avroCompat(p.avro.schema, old.avro.schema, true)...)
		}
		if base == "FORWARD" || base == "FULL" {
			found = append(found, avroCompat(old.avro.schema, p.avro.schema, false)...)
		}
		if len(found) > 0 {
			msgs = append(msgs, found...)
			msgs = append(msgs, fmt.Sprintf("{oldSchemaVersion: %d}", v.Version),
				fmt.Sprintf("{oldSchema: '%s'}", v.Schema), fmt.Sprintf("{compatibility: '%s'}", level))
		}
	}
	return msgs
}

// lookup finds the version of subject that holds the schema.
func (r *Registry) lookup(ctx context.Context, subject string, req schemaRequest, deleted bool) (*version, *Error) {
	if _, err := r.ready(ctx); err != nil {
		return nil, err
	}
	vs := r.st.versions(subject, deleted)
	req.References = r.pinReferences(contextOf(subject), req.References)
	p, perr := r.parseIn(contextOf(subject), req.SchemaType, req.Schema, req.References)
	if perr == nil {
		p, _, perr = r.normalizeRequest(subject, p, req)
	}
	if perr != nil {
		return nil, perr
	}
	if len(vs) == 0 {
		return nil, subjectNotFound(subject)
	}
	for i := len(vs) - 1; i >= 0; i-- {
		if r.keyOfVersion(vs[i]) == p.key {
			return vs[i], nil
		}
	}
	return nil, schemaNotFound()
}

// checkCompat is the compatibility endpoint: against one version, or
// (ver 0) against what the subject's level names.
func (r *Registry) checkCompat(ctx context.Context, subject string, ver int, req schemaRequest) ([]string, *Error) {
	if _, err := r.ready(ctx); err != nil {
		return nil, err
	}
	req.References = r.pinReferences(contextOf(subject), req.References)
	p, perr := r.parseIn(contextOf(subject), req.SchemaType, req.Schema, req.References)
	if perr == nil {
		p, _, perr = r.normalizeRequest(subject, p, req)
	}
	if perr != nil {
		return nil, perr
	}
	level := r.levelOf(subject)
	against := r.st.versions(subject, false)
	if ver != 0 {
		v, err := r.version(subject, ver, false)
		if err != nil {
			return nil, err
		}
		against = []*version{v}
		level = strings.TrimSuffix(level, "_TRANSITIVE")
	}
	return r.compat(p, against, level), nil
}

// deleteSubject soft-deletes a subject's versions, or removes its
// soft-deleted versions for good, and returns the versions affected.
func (r *Registry) deleteSubject(ctx context.Context, subject string, permanent bool) ([]int, *Error) {
	l, rerr := r.ready(ctx)
	if rerr != nil {
		return nil, rerr
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if m := r.modeOf(subject); m == "READONLY" || m == "READONLY_OVERRIDE" {
		return nil, notPermitted("Subject %s is in read-only mode", subject)
	}
	all := r.st.allVersions(subject)
	if len(all) == 0 {
		return nil, subjectNotFound(subject)
	}
	live := r.st.versions(subject, false)
	if err := r.checkNotReferenced(subject, live); err != nil {
		return nil, err
	}
	var out []int
	if !permanent {
		if len(live) == 0 {
			return nil, errf(http.StatusNotFound, 40404, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subject)
		}
		for _, v := range live {
			out = append(out, v.Version)
		}
		latest := all[len(all)-1].Version
		err := r.put(ctx, l, recordKey{KeyType: keyDeleteSubj, Subject: strp(subject)},
			deleteSubjectValue{Subject: subject, Version: latest})
		return out, err
	}
	if len(live) > 0 {
		return nil, errf(http.StatusNotFound, 40405, "Subject '%s' was not deleted first before being permanently deleted", subject)
	}
	for _, v := range all {
		if err := r.put(ctx, l, schemaKey(subject, v.Version), nil); err != nil {
			return out, err
		}
		out = append(out, v.Version)
	}
	return out, nil
}

func (r *Registry) checkNotReferenced(subject string, vs []*version) *Error {
	for _, v := range vs {
		if len(r.st.referencedBy(subject, v.Version)) > 0 {
			return errf(http.StatusUnprocessableEntity, 42206,
				"One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=%s,version=%d}.", subject, v.Version)
		}
	}
	return nil
}

// deleteVersion soft-deletes one version, or removes a soft-deleted one
// for good.
func (r *Registry) deleteVersion(ctx context.Context, subject string, ver int, permanent bool) (int, *Error) {
	l, rerr := r.ready(ctx)
	if rerr != nil {
		return 0, rerr
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if m := r.modeOf(subject); m == "READONLY" || m == "READONLY_OVERRIDE" {
		return 0, notPermitted("Subject %s is in read-only mode", subject)
	}
	// Soft-deleted versions are found too: soft-deleting one again is
	// 40406, as in Confluent's registry, not 40402.
	v, err := r.version(subject, ver, true)
	if err != nil {
		return 0, err
	}
	if rerr := r.checkNotReferenced(subject, []*version{v}); rerr != nil {
		return 0, rerr
	}
	if !permanent {
		if v.Deleted {
			return 0, errf(http.StatusNotFound, 40406, "Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently", subject, v.Version)
		}
		val := schemaValue{Subject: v.Subject, Version: v.Version, ID: v.ID, References: v.References,
			Metadata: v.Metadata, RuleSet: v.RuleSet, Schema: v.Schema, Deleted: true}
		if v.SchemaType != typeAvro {
			val.SchemaType = v.SchemaType
		}
		return v.Version, r.put(ctx, l, schemaKey(subject, v.Version), val)
	}
	if !v.Deleted {
		return 0, errf(http.StatusNotFound, 40407, "Subject '%s' Version %d was not deleted first before being permanently deleted", subject, v.Version)
	}
	return v.Version, r.put(ctx, l, schemaKey(subject, v.Version), nil)
}

// setConfig sets a subject's compatibility level (level != "") and its
// normalize setting (normalize != nil), keeping what is not given, or
// removes both when neither is given; "" subject is the global config. It
// returns the previous level.
func (r *Registry) setConfig(ctx context.Context, subject, level string, normalize *bool) (string, *Error) {
	l, rerr := r.ready(ctx)
	if rerr != nil {
		return "", rerr
	}
	level = strings.ToUpper(level)
	if level != "" && !slices.Contains(levels, level) {
		return "", errf(http.StatusUnprocessableEntity, 42203,
			"Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	prev := r.levelOf(subject)
	if level == "" && normalize == nil {
		return prev, r.put(ctx, l, configKey(subject), nil)
	}
	val := configValue{CompatibilityLevel: level, Normalize: normalize}
	if c, ok := r.st.configOf(subject); ok && level == "" {
		val.CompatibilityLevel = c
	}
	if n, ok := r.st.normalizeOf(subject); ok && normalize == nil {
		val.Normalize = &n
	}
	if subject != "" {
		val.Subject = strp(subject)
	}
	return prev, r.put(ctx, l, configKey(subject), val)
}

// setMode sets (mode != "") or removes a mode; "" subject is the global
// one. IMPORT needs an empty registry (or subject) unless forced.
func (r *Registry) setMode(ctx context.Context, subject, mode string, force bool) (string, *Error) {
	l, rerr := r.ready(ctx)
	if rerr != nil {
		return "", rerr
	}
	mode = strings.ToUpper(mode)
	if mode != "" && !slices.Contains(modes, mode) {
		return "", errf(http.StatusUnprocessableEntity, 42204,
			"Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE, IMPORT")
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	prev := r.modeOf(subject)
	if mode == "IMPORT" && prev != "IMPORT" && !force {
		ctx, name := splitSubject(subject)
		busy := len(r.st.allVersions(subject)) > 0
		switch {
		case subject == "":
			busy = !r.st.empty()
		case name == "":
			busy = !r.st.contextEmpty(ctx)
		}
		if busy {
			return "", notPermitted("Cannot import since found existing subjects")
		}
	}
	if mode == "" {
		return prev, r.put(ctx, l, modeKey(subject), nil)
	}
	val := modeValue{Mode: mode}
	if subject != "" {
		val.Subject = strp(subject)
	}
	return prev, r.put(ctx, l, modeKey(subject), val)
}
