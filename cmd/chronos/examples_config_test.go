package main

import (
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/server/config"
)

// examplesDir is the repository's examples/, seen from this package.
const examplesDir = "../../examples"

// exampleNode is one node of an example as the example starts it: its
// files, relative to examples/, "" for none, and the folder that holds
// them, "" for examples/ itself.
type exampleNode struct {
	local, cluster, shared, dns string
	root                        string
}

// path is the path of the example file rel from this package, "" for
// none.
func (n exampleNode) path(rel string) string {
	if rel == "" {
		return ""
	}
	if n.root == "" {
		return filepath.Join(examplesDir, rel)
	}
	return filepath.Join(n.root, rel)
}

// load loads the node's configuration as the binary does, and fails on
// an error or a warning.
func (n exampleNode) load(t *testing.T) config.Node {
	t.Helper()
	return loadFiles(t, n.path(n.local), n.path(n.cluster), n.path(n.shared), n.path(n.dns))
}

// args are the file flags the node starts with, beside --local-config-file
// and --cluster-config-file.
func (n exampleNode) args() []string {
	return []string{"--shared-config-file=" + n.path(n.shared), "--dns-config-file=" + n.path(n.dns)}
}

// exampleSetup is every node of an example in one of its configurations,
// and the membership they share.
type exampleSetup struct {
	name    string
	nodes   []exampleNode
	members node.Membership
}

// exampleSetups lists every configuration of every example in examples/.
// The scale-up adds a fourth node to the three-node cluster, so its nodes
// 1-3 are the three-node example's.
func exampleSetups() []exampleSetup {
	three := func(cluster string) []exampleNode {
		var ns []exampleNode
		for _, n := range []string{"node1", "node2", "node3"} {
			ns = append(ns, exampleNode{local: "three-nodes/" + n + "/chronos.conf", cluster: cluster})
		}
		return ns
	}
	site := func(s string) []exampleNode {
		dir := "two-sites/site-" + s + "/"
		var ns []exampleNode
		for _, n := range []string{"node1", "node2"} {
			ns = append(ns, exampleNode{local: dir + n + "/chronos.conf", cluster: dir + "chronos_cluster.conf",
				shared: dir + "chronos_shared.conf", dns: "two-sites/dns.json"})
		}
		return ns
	}
	ports := func(ps ...string) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = "127.0.0.1:" + p
		}
		return out
	}
	return []exampleSetup{
		{"single-node", []exampleNode{{local: "single-node/chronos.conf"}}, node.Membership{}},
		{"three-nodes", three("three-nodes/chronos_cluster.conf"), node.Membership{Nodes: ports("7261", "7262", "7263")}},
		{"scale-up/joining", append(three("scale-up/joining/chronos_cluster.conf"), exampleNode{local: "scale-up/node4/chronos.conf", cluster: "scale-up/joining/chronos_cluster.conf"}),
			node.Membership{Nodes: ports("7261", "7262", "7263"), Joining: ports("7264")}},
		{"scale-up/after", append(three("scale-up/after/chronos_cluster.conf"), exampleNode{local: "scale-up/node4/chronos.conf", cluster: "scale-up/after/chronos_cluster.conf"}),
			node.Membership{Nodes: ports("7261", "7262", "7263", "7264")}},
		{"two-sites/site-a", site("a"), node.Membership{Nodes: ports("7281", "7282")}},
		{"two-sites/site-b", site("b"), node.Membership{Nodes: ports("7291", "7292")}},
	}
}

// TestExampleFiles proves that every node of every example loads as the
// binary loads it, with no error and no warning; that the nodes of one
// configuration share their membership and key, each listening on its
// own address among the members; that a joining node and the two sites
// share their cluster's key; that the two sites name each other,
// replicate to each other, resolve each other's names through dns.json
// and give every node an instance number of its own; and that every file
// in examples/ is one a node reads.
func TestExampleFiles(t *testing.T) {
	used := map[string]bool{"README.md": true}
	var siteIDs []int
	keys := map[string]string{} // the key of each setup
	for _, setup := range exampleSetups() {
		for _, n := range setup.nodes {
			for _, f := range []string{n.local, n.cluster, n.shared, n.dns} {
				if f != "" {
					used[f] = true
				}
			}
			cfg := n.load(t)
			m := cfg.Cluster
			if !slices.Equal(m.Nodes, setup.members.Nodes) || !slices.Equal(m.Joining, setup.members.Joining) || len(m.Leaving) > 0 {
				t.Errorf("%s %s: membership %+v, want %+v", setup.name, n.local, m, setup.members)
			}
			if len(m.All()) > 0 && (cfg.Localhost != cfg.ListenAddress() || !slices.Contains(m.All(), cfg.Localhost)) {
				t.Errorf("%s %s: listens on %s as %s, want that address among %v", setup.name, n.local, cfg.ListenAddress(), cfg.Localhost, m.All())
			}
			if len(m.All()) > 0 && cfg.ClusterKey == "" {
				t.Errorf("%s %s: no cluster key", setup.name, n.local)
			}
			if k, ok := keys[setup.name]; ok && k != cfg.ClusterKey {
				t.Errorf("%s %s: another key than the setup's other nodes", setup.name, n.local)
			}
			keys[setup.name] = cfg.ClusterKey
			if n.shared != "" {
				if !cfg.ReplicateAcrossSites || len(cfg.RemoteSites) != 1 || cfg.RemoteSites[0].Name == cfg.LocalSite || cfg.DNS.Len() != 2 {
					t.Errorf("%s %s: site %s, remote %+v, replicate %v, %d DNS names; want the other site, replicated, 2 names",
						setup.name, n.local, cfg.LocalSite, cfg.RemoteSites, cfg.ReplicateAcrossSites, cfg.DNS.Len())
				}
				siteIDs = append(siteIDs, cfg.InstanceID)
			}
		}
	}
	// A node joins with the cluster's key, and sites share theirs.
	for _, same := range [][2]string{{"three-nodes", "scale-up/joining"}, {"three-nodes", "scale-up/after"}, {"two-sites/site-a", "two-sites/site-b"}} {
		if keys[same[0]] != keys[same[1]] {
			t.Errorf("%s and %s have different keys, want one", same[0], same[1])
		}
	}
	if ids := slices.Compact(slices.Sorted(slices.Values(siteIDs))); len(ids) != 4 || ids[0] == node.AutoInstanceID {
		t.Errorf("the two sites' instance numbers %v, want 4 configured, all different", siteIDs)
	}
	err := filepath.WalkDir(examplesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(examplesDir, path)
		if !used[filepath.ToSlash(rel)] {
			t.Errorf("examples/%s is read by no node of exampleSetups: add it there, so that it is tested", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// loadFiles loads a node's configuration as the binary does and fails on
// any error or warning.
func loadFiles(t *testing.T, local, cluster, shared, dns string) config.Node {
	t.Helper()
	f := config.Flags{LocalConfigFile: local, ClusterConfigFile: cluster, SharedConfigFile: shared, DNSConfigFile: dns}
	cfg, err := f.Load()
	if err != nil {
		t.Fatalf("load %s: %v", local, err)
	}
	for _, w := range cfg.Warnings {
		t.Errorf("load %s: warning %+v", local, w)
	}
	return cfg
}
