package amconfig

import (
	"bytes"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v2"
	yaml3 "go.yaml.in/yaml/v3"
)

// The merged config is a YAML node tree: the base config's nodes keep the text, style
// and tag each scalar was written with, so that Alertmanager reads the user's config
// as the user wrote it; the converted AlertmanagerConfigs are added as nodes of their
// own.

// parseNode reads one YAML document whose top is a mapping.
func parseNode(raw []byte) (*yaml3.Node, error) {
	var doc yaml3.Node
	if err := yaml3.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml3.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml3.MappingNode {
		return nil, fmt.Errorf("the config is not a YAML mapping")
	}
	return doc.Content[0], nil
}

// toNode is v as yaml.v2 writes it (the converted parts' structs carry yaml.v2 tags),
// read back as a node.
func toNode(v any) (*yaml3.Node, error) {
	raw, err := yaml.Marshal(v)
	if err != nil {
		return nil, err
	}
	var doc yaml3.Node
	if err := yaml3.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	return doc.Content[0], nil
}

// encodeNode writes doc with yaml.v2's layout: two spaces, list items at their key's
// indentation.
func encodeNode(doc *yaml3.Node) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml3.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// shallowCopy copies n and its list of children, so that children can be replaced or
// added without changing n.
func shallowCopy(n *yaml3.Node) *yaml3.Node {
	if n == nil {
		return &yaml3.Node{Kind: yaml3.MappingNode, Tag: "!!map"}
	}
	c := *n
	c.Content = slices.Clone(n.Content)
	return &c
}

// mapValue is the value of key in mapping m, nil when absent.
func mapValue(m *yaml3.Node, key string) *yaml3.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setMapValue replaces the value of key in mapping m, or appends key.
func setMapValue(m *yaml3.Node, key string, v *yaml3.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml3.Node{Kind: yaml3.ScalarNode, Tag: "!!str", Value: key}, v)
}

// extendList adds items to the list under key in mapping m (first with prepend, else
// last), creating it when absent or null.
func extendList(m *yaml3.Node, key string, items []any, prepend bool) error {
	if len(items) == 0 {
		return nil
	}
	added, err := toNode(items)
	if err != nil {
		return err
	}
	list := mapValue(m, key)
	switch {
	case list == nil || list.Tag == "!!null":
		list = &yaml3.Node{Kind: yaml3.SequenceNode, Tag: "!!seq"}
	case list.Kind != yaml3.SequenceNode:
		return fmt.Errorf("%s is not a list", key)
	default:
		list = shallowCopy(list)
	}
	if prepend {
		list.Content = append(added.Content, list.Content...)
	} else {
		list.Content = append(list.Content, added.Content...)
	}
	list.Style &^= yaml3.FlowStyle
	setMapValue(m, key, list)
	return nil
}
