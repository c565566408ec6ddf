package registry

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// version is one registered version of a subject.
type version struct {
	Subject    string
	Version    int
	ID         int
	SchemaType string // "AVRO", "JSON" or "PROTOBUF"; never ""
	References []Reference
	Metadata   json.RawMessage
	RuleSet    json.RawMessage
	Schema     string
	Deleted    bool
}

// schemaDef is what an id names: a schema text of a type with references.
type schemaDef struct {
	SchemaType string
	Schema     string
	References []Reference
}

// idKey names a schema id: ids are allocated per context.
type idKey struct {
	ctx string
	id  int
}

// store is the registry's state: exactly what replaying _schemas up to
// some offset yields. apply is the only way it changes. The versions it
// hands out are never modified afterwards (a change replaces them), so
// readers use them without the lock.
type store struct {
	mu       sync.RWMutex
	subjects map[string][]*version // by qualified subject; sorted by Version
	ids      map[idKey]schemaDef
	idUses   map[idKey]int     // versions (deleted or not) naming each id
	maxID    map[string]int    // by context
	config   map[string]string // compatibility level by subject; "" is global
	normal   map[string]bool   // the normalize setting by subject, where set; "" is global
	mode     map[string]string // mode by subject; "" is global
	contexts map[string]bool
}

func newStore() *store {
	return &store{
		subjects: map[string][]*version{},
		ids:      map[idKey]schemaDef{},
		idUses:   map[idKey]int{},
		maxID:    map[string]int{},
		config:   map[string]string{},
		normal:   map[string]bool{},
		mode:     map[string]string{},
		contexts: map[string]bool{".": true},
	}
}

// apply replays one _schemas record. Records of unknown key types and
// undecodable values are skipped, so a topic written by a newer registry
// still loads; the error says what was skipped.
func (s *store) apply(r record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := r.Key
	subject := ""
	if k.Subject != nil {
		subject = *k.Subject
	}
	switch k.KeyType {
	case keySchema:
		if r.Value == nil {
			s.removeVersionLocked(subject, k.Version)
			return nil
		}
		var v schemaValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("SCHEMA value: %w", err)
		}
		s.putVersionLocked(&version{Subject: v.Subject, Version: v.Version, ID: v.ID,
			SchemaType: typeOrAvro(v.SchemaType), References: v.References,
			Metadata: v.Metadata, RuleSet: v.RuleSet, Schema: v.Schema, Deleted: v.Deleted})
	case keyConfig:
		delete(s.config, subject)
		delete(s.normal, subject)
		if r.Value == nil {
			return nil
		}
		var v configValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("CONFIG value: %w", err)
		}
		if v.CompatibilityLevel != "" {
			s.config[subject] = v.CompatibilityLevel
		}
		if v.Normalize != nil {
			s.normal[subject] = *v.Normalize
		}
	case keyMode:
		if r.Value == nil {
			delete(s.mode, subject)
			return nil
		}
		var v modeValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("MODE value: %w", err)
		}
		s.mode[subject] = v.Mode
	case keyDeleteSubj:
		if r.Value == nil {
			return nil
		}
		var v deleteSubjectValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("DELETE_SUBJECT value: %w", err)
		}
		// Versions are shared with readers: replace, never modify.
		for i, ver := range s.subjects[v.Subject] {
			if ver.Version <= v.Version && !ver.Deleted {
				cp := *ver
				cp.Deleted = true
				s.subjects[v.Subject][i] = &cp
			}
		}
	case keyClearSubject:
		if r.Value == nil {
			return nil
		}
		var v clearSubjectValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("CLEAR_SUBJECT value: %w", err)
		}
		for _, ver := range append([]*version(nil), s.subjects[v.Subject]...) {
			if ver.Deleted {
				s.removeVersionLocked(v.Subject, ver.Version)
			}
		}
	case keyContext:
		if k.Context == "" || k.Context == defaultContext {
			return nil
		}
		if r.Value == nil {
			delete(s.contexts, k.Context)
		} else {
			s.contexts[k.Context] = true
		}
	case keyNoop:
	default:
		return fmt.Errorf("unknown key type %q", k.KeyType)
	}
	return nil
}

func typeOrAvro(t string) string {
	if t == "" {
		return typeAvro
	}
	return strings.ToUpper(t)
}

func (s *store) putVersionLocked(v *version) {
	vs := s.subjects[v.Subject]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].Version >= v.Version })
	if i < len(vs) && vs[i].Version == v.Version {
		s.releaseIDLocked(vs[i].Subject, vs[i].ID)
		vs[i] = v
	} else {
		vs = append(vs, nil)
		copy(vs[i+1:], vs[i:])
		vs[i] = v
	}
	s.subjects[v.Subject] = vs
	ctx := contextOf(v.Subject)
	k := idKey{ctx, v.ID}
	s.ids[k] = schemaDef{SchemaType: v.SchemaType, Schema: v.Schema, References: v.References}
	s.idUses[k]++
	s.maxID[ctx] = max(s.maxID[ctx], v.ID)
}

func (s *store) removeVersionLocked(subject string, ver int) {
	vs := s.subjects[subject]
	for i, v := range vs {
		if v.Version == ver {
			s.releaseIDLocked(subject, v.ID)
			vs = append(vs[:i:i], vs[i+1:]...)
			break
		}
	}
	if len(vs) == 0 {
		delete(s.subjects, subject)
	} else {
		s.subjects[subject] = vs
	}
}

// releaseIDLocked forgets an id's schema once no version names it. maxID
// is kept: ids are never reused.
func (s *store) releaseIDLocked(subject string, id int) {
	k := idKey{contextOf(subject), id}
	if s.idUses[k]--; s.idUses[k] <= 0 {
		delete(s.idUses, k)
		delete(s.ids, k)
	}
}

// versions returns the subject's versions, soft-deleted ones only when
// deleted is set. The slice is a copy; the versions are shared and must
// not be modified.
func (s *store) versions(subject string, deleted bool) []*version {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*version
	for _, v := range s.subjects[subject] {
		if deleted || !v.Deleted {
			out = append(out, v)
		}
	}
	return out
}

// allVersions returns every version, including soft-deleted ones.
func (s *store) allVersions(subject string) []*version { return s.versions(subject, true) }

// schemaByID returns the schema an id names in a context.
func (s *store) schemaByID(ctx string, id int) (schemaDef, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d, ok := s.ids[idKey{ctx, id}]
	return d, ok
}

// subjectNames returns the sorted names of subjects with a version
// (a live one unless deleted) that match prefix (subjectMatches).
func (s *store) subjectNames(prefix string, deleted bool) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for name, vs := range s.subjects {
		if !subjectMatches(name, prefix) {
			continue
		}
		for _, v := range vs {
			if deleted || !v.Deleted {
				out = append(out, name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// usesOf returns the versions of a context that carry id, ordered by
// subject and version.
func (s *store) usesOf(ctx string, id int, deleted bool) []*version {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*version
	for name, vs := range s.subjects {
		if contextOf(name) != ctx {
			continue
		}
		for _, v := range vs {
			if v.ID == id && (deleted || !v.Deleted) {
				out = append(out, v)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Subject != out[j].Subject {
			return out[i].Subject < out[j].Subject
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// referencedBy returns the ids of live versions that reference subject's
// version ver (a reference names a subject of its referrer's context
// unless qualified).
func (s *store) referencedBy(subject string, ver int) []int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []int
	for _, vs := range s.subjects {
		for _, v := range vs {
			if v.Deleted {
				continue
			}
			for _, r := range v.References {
				if refSubject(contextOf(v.Subject), r.Subject) == subject && r.Version == ver {
					out = append(out, v.ID)
					break
				}
			}
		}
	}
	sort.Ints(out)
	return out
}

func (s *store) configOf(subject string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.config[subject]
	return c, ok
}

// normalizeOf is a subject's normalize setting, if set ("" is global).
func (s *store) normalizeOf(subject string) (bool, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.normal[subject]
	return n, ok
}

func (s *store) modeOf(subject string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.mode[subject]
	return m, ok
}

// contextNames lists the default context and the recorded ones, sorted.
func (s *store) contextNames() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for c := range s.contexts {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func (s *store) hasContext(ctx string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return ctx == defaultContext || s.contexts[ctx]
}

// contextEmpty reports whether no subject of ctx has a version, even a
// soft-deleted one.
func (s *store) contextEmpty(ctx string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for name := range s.subjects {
		if contextOf(name) == ctx {
			return false
		}
	}
	return true
}

// nextID is the id the next new schema of a context gets.
func (s *store) nextID(ctx string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.maxID[ctx] + 1
}

// empty reports whether no subject has any version.
func (s *store) empty() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.subjects) == 0
}
