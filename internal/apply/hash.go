package apply

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// hashOf hashes the desired object as rendered (without the hash
// annotation, which render never sets). Built-in kinds hash their protobuf
// encoding, which Kubernetes generates deterministically (map keys sorted)
// and which is several times cheaper than JSON; other kinds hash their JSON
// (fields in declaration order, map keys sorted). Secrets and ConfigMaps, whose
// data is most of what an apply hashes (the configuration pieces, on every
// reconcile), hash the encoding of their metadata and then their data, key by
// key, without copying it into an encoding first. The kind is part of the
// hash. A library upgrade that changes an encoding costs one write per
// object, never a missed change.
func hashOf(obj client.Object) (string, error) {
	if obj.GetAnnotations()[HashAnnotation] != "" {
		return "", fmt.Errorf("%T %s already carries %s", obj, client.ObjectKeyFromObject(obj), HashAnnotation)
	}
	s := hashStates.Get().(*hashState)
	defer hashStates.Put(s)
	s.h.Reset()
	gvk := obj.GetObjectKind().GroupVersionKind()
	// What gvk.String() gives, without building it.
	s.buf = append(append(append(append(append(append(s.buf[:0], gvk.Group...), '/'), gvk.Version...), ", Kind="...), gvk.Kind...), 0)
	s.h.Write(s.buf)
	var err error
	switch o := obj.(type) {
	case *corev1.Secret:
		err = s.meta(&o.ObjectMeta)
		s.fields(string(o.Type))
		s.bools(o.Immutable)
		hashMap(s, o.Data)
		hashMap(s, o.StringData)
	case *corev1.ConfigMap:
		err = s.meta(&o.ObjectMeta)
		s.bools(o.Immutable)
		hashMap(s, o.Data)
		hashMap(s, o.BinaryData)
	default:
		var b []byte
		if pm, ok := obj.(protoMarshaler); ok {
			b, err = s.marshal(pm)
		} else {
			b, err = json.Marshal(obj)
		}
		s.h.Write(b)
	}
	if err != nil {
		return "", fmt.Errorf("hash %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(s.h.Sum(sum[:0])[:12]), nil
}

// hashState is one hashOf's digest and buffer, pooled: a render applies hundreds of objects
// (a Role and a RoleBinding per namespace), and hashing each would otherwise allocate a
// digest and its encoding every time.
type hashState struct {
	h   hash.Hash
	buf []byte
}

var hashStates = sync.Pool{New: func() any { return &hashState{h: sha256.New()} }}

// protoMarshaler is what the generated protobuf code of the built-in kinds offers.
type protoMarshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// marshal encodes m into the state's buffer, as m.Marshal() would into a new one.
func (s *hashState) marshal(m protoMarshaler) ([]byte, error) {
	size := m.Size()
	s.buf = slices.Grow(s.buf[:0], size)[:size]
	n, err := m.MarshalToSizedBuffer(s.buf)
	if err != nil {
		return nil, err
	}
	return s.buf[:n], nil
}

// meta hashes an object's metadata in its protobuf encoding.
func (s *hashState) meta(m *metav1.ObjectMeta) error {
	b, err := s.marshal(m)
	if err != nil {
		return err
	}
	s.field(b)
	return nil
}

// field hashes b with its length first, so that no two lists of fields hash the same bytes.
func (s *hashState) field(b []byte) {
	s.length(len(b))
	s.h.Write(b)
}

// fields hashes each of fields as field does.
func (s *hashState) fields(fields ...string) {
	for _, f := range fields {
		s.length(len(f))
		io.WriteString(s.h, f)
	}
}

// length hashes n as a varint, the prefix of a field.
func (s *hashState) length(n int) {
	var b [binary.MaxVarintLen64]byte
	s.h.Write(b[:binary.PutUvarint(b[:], uint64(n))])
}

// bools hashes an optional bool as its value and whether it is set, both written out.
func (s *hashState) bools(b *bool) {
	v, set := "false", "false"
	if b != nil {
		set = "true"
		if *b {
			v = "true"
		}
	}
	s.fields(v, set)
}

// hashMap hashes a map's size (written out), then its entries in key order.
func hashMap[V string | []byte](s *hashState, m map[string]V) {
	var n [20]byte
	s.field(strconv.AppendInt(n[:0], int64(len(m)), 10))
	keys := slices.AppendSeq(make([]string, 0, 16), maps.Keys(m))
	slices.Sort(keys)
	for _, k := range keys {
		s.fields(k)
		switch v := any(m[k]).(type) {
		case []byte:
			s.field(v)
		case string:
			s.fields(v)
		}
	}
}
