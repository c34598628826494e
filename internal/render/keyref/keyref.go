// Package keyref reads the Secret and ConfigMap keys that configs reference, the same way
// for every generator: from objects fetched beforehand, keyed "namespace/name", with the
// reference's optional flag deciding whether an absent one is an error.
package keyref

import corev1 "k8s.io/api/core/v1"

// Missing says what a reference points at that does not exist.
type Missing int

const (
	// Found: the value is there (or the reference is optional and it is not).
	Found Missing = iota
	// NoObject: the Secret or ConfigMap does not exist.
	NoObject
	// NoKey: the object exists without the key.
	NoKey
)

// Secret reads key of the Secret ns/name from secrets. Objects read from files (the CLI)
// may carry stringData, which the API server would have merged into data.
func Secret(secrets map[string]*corev1.Secret, ns string, sel *corev1.SecretKeySelector) (string, Missing) {
	s := secrets[ns+"/"+sel.Name]
	if s == nil {
		return "", absent(sel.Optional, NoObject)
	}
	if v, ok := s.Data[sel.Key]; ok {
		return string(v), Found
	}
	if v, ok := s.StringData[sel.Key]; ok {
		return v, Found
	}
	return "", absent(sel.Optional, NoKey)
}

// ConfigMap reads key of the ConfigMap ns/name from configMaps, text or binary.
func ConfigMap(configMaps map[string]*corev1.ConfigMap, ns string, sel *corev1.ConfigMapKeySelector) (string, Missing) {
	cm := configMaps[ns+"/"+sel.Name]
	if cm == nil {
		return "", absent(sel.Optional, NoObject)
	}
	if v, ok := cm.Data[sel.Key]; ok {
		return v, Found
	}
	if v, ok := cm.BinaryData[sel.Key]; ok {
		return string(v), Found
	}
	return "", absent(sel.Optional, NoKey)
}

func absent(optional *bool, m Missing) Missing {
	if optional != nil && *optional {
		return Found
	}
	return m
}
