#!/usr/bin/env bash
# Fails when a test left an etcd, kube-apiserver, kube-controller-manager,
# prometheus or lookout process running.
set -u
sleep 1
left=$(pgrep -a -f '/lookout/bin/|lookout-e2e|lookout-reloader' | grep -v -e pgrep -e check-no-leftovers || true)
if [ -n "$left" ]; then
	echo "leftover processes after the tests:" >&2
	echo "$left" >&2
	exit 1
fi
echo "no etcd / kube-apiserver / kube-controller-manager / prometheus process left running"
