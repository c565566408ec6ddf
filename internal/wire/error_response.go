package wire

import (
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrorResponse is the answer to req that fails all of it with code, as
// Kafka's AbstractRequest.getErrorResponse is, for any API: the response
// of req's type and version in which every error code is code (and every
// error message, when message is not empty, message). The request's lists
// of named entities are mirrored, so that each topic, partition or group
// it names comes back with the error:
//
//   - a response list with a request list of the same name gets one
//     element per request element, with the fields both have (the
//     entity's name, id or index; a string also fills a nullable string);
//   - a request list of names or ids gives one element each, named by
//     the field of the singular name (Partitions []int32 → Partition,
//     GroupIDs []string → GroupID).
//
// A response list with nothing to mirror stays empty, and top-level
// fields other than errors keep their defaults (a heartbeat's member
// epoch is not echoed back).
//
// AlterReplicaLogDirs names its partitions under directories, which its
// response does not have: each of its topics comes back with its
// partitions, as Kafka's AlterReplicaLogDirsRequest answers.
func ErrorResponse(req kmsg.Request, code *kerr.Error, message string) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if r, ok := req.(*kmsg.AlterReplicaLogDirsRequest); ok {
		out := resp.(*kmsg.AlterReplicaLogDirsResponse)
		for _, d := range r.Dirs {
			for _, t := range d.Topics {
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, code.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		}
		return out
	}
	fillError(reflect.ValueOf(req).Elem(), reflect.ValueOf(resp).Elem(), code.Code, message, true)
	return resp
}

var nullableString = reflect.TypeFor[*string]()

// fillError sets the errors of resp, a response struct, and mirrors the
// lists of req, the request struct it answers. Below the top level, it
// also copies the fields resp shares with req.
func fillError(req, resp reflect.Value, code int16, message string, top bool) {
	t := resp.Type()
	for i := range t.NumField() {
		f, v := t.Field(i), resp.Field(i)
		switch {
		case !f.IsExported():
		case strings.HasSuffix(f.Name, "ErrorCode") && f.Type.Kind() == reflect.Int16:
			v.SetInt(int64(code))
		case strings.HasSuffix(f.Name, "ErrorMessage") && f.Type == nullableString:
			if message != "" {
				v.Set(reflect.ValueOf(&message))
			}
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			if !req.IsValid() {
				break
			}
			if out, ok := mirrorList(req, f, code, message); ok {
				v.Set(out)
			}
		case !top && req.IsValid():
			copyField(req.FieldByName(f.Name), v)
		}
	}
}

// mirrorList builds the response list f from the request list it
// answers, if req has one (see ErrorResponse).
func mirrorList(req reflect.Value, f reflect.StructField, code int16, message string) (reflect.Value, bool) {
	elem := f.Type.Elem()
	name := f.Name
	src := req.FieldByName(name)
	if !src.IsValid() || !isList(src.Type()) {
		// A list of names under another name: GroupIDs for Groups.
		src = reflect.Value{}
		for i := range req.NumField() {
			rf := req.Type().Field(i)
			if !isList(rf.Type) || rf.Type.Elem().Kind() == reflect.Struct {
				continue
			}
			if _, ok := elem.FieldByName(singular(rf.Name)); ok {
				name, src = rf.Name, req.Field(i)
				break
			}
		}
		if !src.IsValid() {
			return reflect.Value{}, false
		}
	}
	out := reflect.MakeSlice(f.Type, src.Len(), src.Len())
	for j := range src.Len() {
		e := out.Index(j)
		if d, ok := e.Addr().Interface().(interface{ Default() }); ok {
			d.Default()
		}
		if s := src.Index(j); s.Kind() == reflect.Struct {
			fillError(s, e, code, message, false)
		} else {
			fillError(reflect.Value{}, e, code, message, false)
			copyField(s, e.FieldByName(singular(name)))
		}
	}
	return out, true
}

// isList reports whether t is a list of entities or of their names: a
// slice, but not bytes.
func isList(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8
}

// copyField sets dst from src when src holds an entity's name, id or
// index of a type dst takes: the same scalar type, or a string for a
// nullable string.
func copyField(src, dst reflect.Value) {
	if !src.IsValid() || !dst.IsValid() {
		return
	}
	switch {
	case src.Type() == dst.Type():
		switch src.Kind() {
		case reflect.String, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Array:
			dst.Set(src)
		case reflect.Pointer:
			if src.Type() == nullableString {
				dst.Set(src)
			}
		}
	case src.Kind() == reflect.String && dst.Type() == nullableString:
		s := src.String()
		dst.Set(reflect.ValueOf(&s))
	}
}

// singular is a list field's name for one of its elements.
func singular(name string) string {
	return strings.TrimSuffix(name, "s")
}
