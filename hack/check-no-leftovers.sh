#!/usr/bin/env bash
# Usage: check-no-leftovers.sh snapshot FILE   (before the tests)
#        check-no-leftovers.sh check FILE      (after the tests)
# Fails when the tests left an etcd, kube-apiserver, kube-controller-manager,
# prometheus, reloader, operator, kubelet, containerd or shim process running that was not
# there before.
set -u
pattern='/lookout/bin/|lookout-e2e|lookout-reloader|lookout-controlplane|lookout-node'
list() { pgrep -f "$pattern" | sort -n; }
case "${1:-}" in
snapshot)
	mkdir -p "$(dirname "$2")"
	list >"$2"
	;;
check)
	sleep 1
	new=$(comm -13 "$2" <(list))
	left=""
	for pid in $new; do
		[ "$pid" = "$$" ] && continue
		cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
		case "$cmd" in *check-no-leftovers*|*pgrep*) continue ;; esac
		left+="$pid $cmd"$'\n'
	done
	if [ -n "$left" ]; then
		echo "leftover processes after the tests:" >&2
		printf '%s' "$left" >&2
		exit 1
	fi
	echo "no etcd / kube-apiserver / kube-controller-manager / prometheus process left running"
	;;
*)
	echo "usage: $0 snapshot|check FILE" >&2
	exit 2
	;;
esac
