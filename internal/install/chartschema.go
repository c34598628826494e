package install

import (
	"encoding/json"
)

// valuesSchema is the chart's values.schema.json: Helm checks the values of
// every install, upgrade, template and lint against it, so that a misspelt
// value (replica, networkpolicy.enabled) fails instead of being ignored.
// The Kubernetes objects passed through (resources, affinity...) are left to
// the apiserver's own validation.
func valuesSchema() ([]byte, error) {
	str := obj{"type": "string"}
	boolean := obj{"type": "boolean"}
	strings := obj{"type": "array", "items": str}
	stringMap := obj{"type": "object", "additionalProperties": str}
	free := obj{"type": "object"}
	image := func(extra obj) obj {
		p := obj{"repository": str, "tag": str}
		for k, v := range extra {
			p[k] = v
		}
		return closed(p)
	}
	schema := closed(obj{
		"fullnameOverride":  obj{"type": "string", "maxLength": 53},
		"crds":              closed(obj{"install": boolean}),
		"monitoring":        closed(obj{"enabled": boolean}),
		"postgres":          closed(obj{"enabled": boolean}),
		"image":             image(obj{"pullPolicy": obj{"type": "string", "enum": []string{"", "Always", "IfNotPresent", "Never"}}}),
		"imagePullSecrets":  obj{"type": "array", "items": closed(obj{"name": str})},
		"serviceAccount":    closed(obj{"annotations": stringMap}),
		"podAnnotations":    stringMap,
		"podLabels":         stringMap,
		"priorityClassName": str,
		"reloaderImage":     image(nil),
		"replicas":          obj{"type": "integer", "minimum": 1},
		"namespaces":        strings,
		"generateRBAC":      boolean,
		"webhook":           closed(obj{"enabled": boolean, "conversion": boolean}),
		"selfMonitoring":    closed(obj{"enabled": boolean}),
		"networkPolicy": closed(obj{
			"enabled":        boolean,
			"apiServerPorts": obj{"type": "array", "items": obj{"type": "integer", "minimum": 1, "maximum": 65535}},
			"apiServerCIDRs": strings,
		}),
		"extraArgs":          strings,
		"resources":          free,
		"nodeSelector":       stringMap,
		"tolerations":        obj{"type": "array", "items": free},
		"affinity":           free,
		"podSecurityContext": free,
		"securityContext":    free,
	})
	schema["$schema"] = "https://json-schema.org/draft-07/schema#"
	schema["title"] = "Values of the lookout chart"
	b, err := json.MarshalIndent(schema, "", "  ")
	return append(b, '\n'), err
}

type obj = map[string]any

// closed is an object schema that allows only properties.
func closed(properties obj) obj {
	return obj{"type": "object", "properties": properties, "additionalProperties": false}
}
