package scrape

// nodeNameField selects the pods of the node whose name the reloader substitutes for
// $(NODE_NAME). The API server's watch cache indexes pods by node, so each agent of a
// DaemonSet watches only its own node's pods instead of relabeling away everyone else's.
const nodeNameField = "spec.nodeName=$(NODE_NAME)"

// onThisNodeOnly restricts pod discovery to the server's own node. Prometheus allows one
// selector per role, so the field joins a label selector the monitor already has.
func (mc *monitorContext) onThisNodeOnly() {
	for i := range mc.sd.Selectors {
		if mc.sd.Selectors[i].Role == mc.sd.Role {
			mc.sd.Selectors[i].Field = nodeNameField
			return
		}
	}
	mc.sd.Selectors = append(mc.sd.Selectors, sdSelector{Role: mc.sd.Role, Field: nodeNameField})
}
