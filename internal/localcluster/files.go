package localcluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// ClusterFileName is the cluster file every node of a local cluster
// shares, in Options.Dir; each node's own file is NodeDir/chronos.conf.
const ClusterFileName = "chronos_cluster.conf"

// nodeFiles are one node's paths.
type nodeFiles struct {
	name    string // node1, node2, ...
	addr    string // 127.0.0.1:port
	dir     string // Dir/node1: its chronos.conf, and its log ([logging] folder)
	local   string // Dir/node1/chronos.conf
	cluster string // Dir/chronos_cluster.conf
}

// args are the node's command line: its two files and no other, so that
// a machine's /etc/chronos and dns.json never reach a local cluster. The
// node keeps its timers in its folder, or in memory only.
func (f nodeFiles) args(inMemory bool) []string {
	storage := f.dir
	if inMemory {
		storage = ""
	}
	return []string{"--local-config-file", f.local, "--cluster-config-file", f.cluster,
		"--shared-config-file=", "--dns-config-file=", "--storage-dir=" + storage}
}

// files lists the paths under dir of each node of addrs, the first of
// them node number first+1.
func (o Options) files(dir string, addrs []string, first int) []nodeFiles {
	out := make([]nodeFiles, len(addrs))
	for i, a := range addrs {
		name := fmt.Sprintf("node%d", first+i+1)
		d := filepath.Join(dir, name)
		out[i] = nodeFiles{name: name, addr: a, dir: d, local: filepath.Join(d, "chronos.conf"), cluster: filepath.Join(dir, ClusterFileName)}
	}
	return out
}

// writeFiles writes the cluster file, with a new random key, and each
// node's own file, and returns the key. The files hold the key, so only
// their owner may read them.
func (o Options) writeFiles(nodes []nodeFiles) (string, error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("localcluster: cluster key: %w", err)
	}
	key := hex.EncodeToString(raw)
	if err := writeClusterFile(nodes[0].cluster, addrsOf(nodes), nil, key); err != nil {
		return "", err
	}
	return key, o.writeNodeFiles(nodes, 0, addrsOf(nodes))
}

// writeClusterFile writes the cluster file at path: nodes as steady
// members, joining as joining ones.
func writeClusterFile(path string, nodes, joining []string, key string) error {
	if err := os.WriteFile(path, []byte(clusterFile(nodes, joining, key)), 0o600); err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	return nil
}

// addrsOf lists the addresses of nodes.
func addrsOf(nodes []nodeFiles) []string {
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.addr
	}
	return addrs
}

// writeNodeFiles writes each node's own file; first is the index of
// nodes[0] in the cluster of all, for NodeConf.
func (o Options) writeNodeFiles(nodes []nodeFiles, first int, all []string) error {
	level := o.LogLevel
	if level == 0 {
		level = 2
	}
	for i, n := range nodes {
		if err := os.MkdirAll(n.dir, 0o700); err != nil {
			return fmt.Errorf("localcluster: %w", err)
		}
		conf := localFile(n, level)
		if o.NodeConf != nil {
			conf += "\n" + o.NodeConf(first+i, all)
		}
		if err := os.WriteFile(n.local, []byte(conf), 0o600); err != nil {
			return fmt.Errorf("localcluster: %w", err)
		}
	}
	return nil
}

// clusterFile is the cluster file every node reads: the membership and
// the key.
func clusterFile(addrs, joining []string, key string) string {
	var b strings.Builder
	b.WriteString("# Written by `chronos cluster`: the membership of a local cluster, read\n" +
		"# by every node. Edit it and send `chronos cluster` SIGHUP to change it; see\n" +
		"# docs/operations.md and examples/ for clusters of machines.\n" +
		"[cluster]\n")
	for _, a := range addrs {
		fmt.Fprintf(&b, "node = %s\n", a)
	}
	for _, a := range joining {
		fmt.Fprintf(&b, "joining = %s\n", a)
	}
	b.WriteString("# Signs the requests between nodes; new for every run of the command.\n")
	fmt.Fprintf(&b, "key = %s\n", key)
	return b.String()
}

// localFile is one node's own file: where it listens (and so its address
// in the cluster, as [cluster] localhost is not set) and where it logs.
func localFile(n nodeFiles, level int) string {
	host, port, _ := net.SplitHostPort(n.addr)
	return fmt.Sprintf("# Written by `chronos cluster`: %s's own settings.\n"+
		"[http]\nbind-address = %s\nbind-port = %s\n\n"+
		"[logging]\nlevel = %d\nfolder = %s\n", n.name, host, port, level, n.dir)
}
