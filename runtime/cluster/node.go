package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ringactor/ringactor/internal/ctxcheck"
	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/cluster/internal/hosts"
	"github.com/ringactor/ringactor/runtime/cluster/internal/wire"
	"github.com/ringactor/ringactor/runtime/internal/ext"
	"github.com/ringactor/ringactor/runtime/internal/extid"
)

// NodeConfig makes a runtime a member of a protoactor cluster, so that
// pipelines can place stages on other nodes (StageSpec.Node) and other
// nodes can place stages on it.
type NodeConfig struct {
	// Name is the node's name in StageSpec.Node: unique in the cluster,
	// letters, digits, '-', '_' and '.'.
	Name string
	// Cluster is the cluster's name (default "ringactor"); nodes join only
	// their own cluster.
	Cluster string
	// Host and Port are where protoactor remote listens (default
	// 127.0.0.1, and a free port).
	Host string
	Port int
	// ManagePort and Peers configure the provider for a fixed host list
	// (ringactor's own, over protoactor's automanaged protocol): each node
	// answers health checks on ManagePort (on every interface), and Peers
	// lists every node's host:ManagePort, this one's included. A peer
	// leaves after two failed checks in a row and, should it answer again
	// (a stalled process resumed), rejoins under a new member id. Ignored
	// when Provider is set.
	ManagePort int
	Peers      []string
	// RefreshTTL is how often the fixed-host-list provider checks its
	// peers (default 500 ms), each check bounded by twice this, at least
	// 1 s: a node that stops answering leaves the topology after two
	// failed checks in a row.
	RefreshTTL time.Duration
	// Provider, when set, replaces the fixed-host-list provider (tests use
	// protoactor's in-memory test provider). protoactor's member list never
	// lets a member id that left back in: with a provider that keeps a
	// resumed process's id, such as automanaged, a node that stalled stays
	// out until it is restarted.
	Provider cluster.ClusterProvider
}

// DefaultClusterName is the cluster a node joins when NodeConfig.Cluster is
// empty.
const DefaultClusterName = "ringactor"

// ErrNode: a node that cannot join, or a node name that is not in the
// cluster.
var ErrNode = errors.New("ringactor: cluster node")

// Node is a runtime's membership of a cluster. Pipelines built with
// Node.Build may name other nodes in StageSpec.Node.
type Node struct {
	rt       *ra.Runtime
	cfg      NodeConfig
	cluster  *cluster.Cluster
	provider cluster.ClusterProvider

	mu      sync.Mutex
	members map[string]string // node name -> member id, from the topology events
	changed chan struct{}     // closed and replaced on every topology change
	sub     *eventstream.Subscription

	leaveOnce sync.Once
}

// nodeKindPrefix names the cluster kind every node registers under its own
// name: a grain of kind nodeKindPrefix+name can only be activated on that
// node, which is how a stage is placed on a node by name.
const nodeKindPrefix = "ringactor.node."

func nodeKind(name string) string { return nodeKindPrefix + name }

func validNodeName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Join starts protoactor remote and cluster membership on the runtime's
// actor system and returns once this node is a member, or when ctx ends.
// A runtime joins at most one cluster. Leave ends the membership (and the
// actor system with it).
func Join(ctx context.Context, rt *ra.Runtime, cfg NodeConfig) (*Node, error) {
	if err := ctxcheck.Live(ctx, "cluster.Join"); err != nil {
		return nil, err
	}
	if !validNodeName(cfg.Name) {
		return nil, fmt.Errorf("%w: name %q: use letters, digits, '-', '_' or '.', at most 128", ErrNode, cfg.Name)
	}
	if cfg.Cluster == "" {
		cfg.Cluster = DefaultClusterName
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.RefreshTTL <= 0 {
		cfg.RefreshTTL = 500 * time.Millisecond
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("%w %q: port %d out of range", ErrNode, cfg.Name, cfg.Port)
	}
	release, ok := ext.Of(rt).Claim(extid.ClusterNode) // its actor system becomes a cluster member once
	if !ok {
		return nil, fmt.Errorf("%w %q: this runtime has already joined a cluster; one node per runtime", ErrNode, cfg.Name)
	}
	n, err := join(ctx, rt, cfg)
	if err != nil {
		release() // nothing joined: a later Join may try again
	}
	return n, err
}

func join(ctx context.Context, rt *ra.Runtime, cfg NodeConfig) (*Node, error) {
	provider := cfg.Provider
	if provider == nil {
		if cfg.ManagePort <= 0 || cfg.ManagePort > 65535 || len(cfg.Peers) == 0 {
			return nil, fmt.Errorf("%w %q: set ManagePort and Peers (every node's host:ManagePort) for the automanaged provider, or set Provider", ErrNode, cfg.Name)
		}
		if err := portFree("0.0.0.0", cfg.ManagePort); err != nil {
			return nil, fmt.Errorf("%w %q: manage port: %v: pick another ManagePort", ErrNode, cfg.Name, err)
		}
		provider = hosts.New(cfg.RefreshTTL, cfg.ManagePort, cfg.Peers)
	}
	if cfg.Port != 0 {
		if err := portFree(cfg.Host, cfg.Port); err != nil {
			return nil, fmt.Errorf("%w %q: %v: pick another Port, or 0 for a free one", ErrNode, cfg.Name, err)
		}
	}
	n := &Node{rt: rt, cfg: cfg, provider: provider, members: map[string]string{}, changed: make(chan struct{})}
	kind := cluster.NewKind(nodeKind(cfg.Name), actor.PropsFromProducer(func() actor.Actor { return &segmentGrain{rt: rt} }))
	ccfg := cluster.Configure(cfg.Cluster, provider, disthash.New(), remote.Configure(cfg.Host, cfg.Port, transportLimits()...),
		cluster.WithKinds(kind), cluster.WithRequestTimeout(10*time.Second),
		// protoactor's BlockList is written under a lock but read without
		// one (a data race with the provider's topology updates), so this
		// node avoids blocking members: a dead node leaves the topology
		// through the provider's health checks instead of an expired
		// gossip heartbeat, and Leave does not gossip a graceful leave.
		cluster.WithHeartbeatExpiration(24*time.Hour))
	n.sub = rt.System().EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*cluster.ClusterTopology); ok {
			n.topology(t)
		}
	})
	n.cluster = cluster.New(rt.System(), ccfg)
	started := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil { // protoactor panics where it cannot start
				started <- fmt.Errorf("%w %q: protoactor cluster did not start: %v", ErrNode, cfg.Name, r)
			}
		}()
		n.cluster.StartMember()
		started <- nil
	}()
	select {
	case err := <-started:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		return nil, fmt.Errorf("%w %q: joining: %w", ErrNode, cfg.Name, ctx.Err())
	}
	if err := n.WaitFor(ctx, cfg.Name); err != nil {
		return nil, err
	}
	return n, nil
}

// transportLimits configures protoactor remote so that no message a
// cluster pipeline sends ends the link (internal/wire has the limits): at most
// wire.EndpointWriterBatch messages in one gRPC message, and gRPC's limits,
// receiving and sending, on both ends of every link, raised from 4 MiB to
// wire.MaxTransportMessage. Links stay plaintext, as protoactor's default.
func transportLimits() []remote.ConfigOption {
	return []remote.ConfigOption{
		remote.WithEndpointWriterBatchSize(wire.EndpointWriterBatch),
		remote.WithServerOptions(grpc.MaxRecvMsgSize(wire.MaxTransportMessage), grpc.MaxSendMsgSize(wire.MaxTransportMessage)),
		remote.WithDialOptions(grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(wire.MaxTransportMessage), grpc.MaxCallSendMsgSize(wire.MaxTransportMessage))),
	}
}

// portFree reports whether host:port can be listened on now.
func portFree(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

func (n *Node) topology(t *cluster.ClusterTopology) {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.members)
	for _, m := range t.Members {
		for _, k := range m.Kinds {
			if name, ok := strings.CutPrefix(k, nodeKindPrefix); ok {
				n.members[name] = m.Id
			}
		}
	}
	close(n.changed)
	n.changed = make(chan struct{})
}

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.Name }

// Address is where the node's protoactor remote listens.
func (n *Node) Address() string { return n.rt.System().Address() }

// Runtime is the runtime the node belongs to.
func (n *Node) Runtime() *ra.Runtime { return n.rt }

// Members lists the names of the nodes in the cluster now, sorted.
func (n *Node) Members() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	names := make([]string, 0, len(n.members))
	for name := range n.members {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// has reports whether the named node is a member now, and its member id.
func (n *Node) has(name string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id, ok := n.members[name]
	return id, ok
}

// WaitFor returns once every named node is a member of the cluster, or
// when ctx ends (naming the nodes still missing).
func (n *Node) WaitFor(ctx context.Context, names ...string) error {
	if err := ctxcheck.NotNil(ctx, "Node.WaitFor"); err != nil {
		return err
	}
	for {
		n.mu.Lock()
		var missing []string
		for _, name := range names {
			if _, ok := n.members[name]; !ok {
				missing = append(missing, name)
			}
		}
		changed := n.changed
		n.mu.Unlock()
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: node(s) %s not in cluster %q (members: %s): start them with the same cluster name and peers: %w",
				ErrNode, strings.Join(missing, ", "), n.cfg.Cluster, strings.Join(n.Members(), ", "), ctx.Err())
		}
	}
}

// waitForNew returns once the named node is a member with an id other than
// old (a restarted node), or once the old member has stayed in the
// topology for a few health-check rounds (it lives: only its connection
// broke), or when ctx ends.
func (n *Node) waitForNew(ctx context.Context, name, old string) error {
	grace := time.NewTimer(3*n.cfg.RefreshTTL + time.Second)
	defer grace.Stop()
	for {
		n.mu.Lock()
		id, ok := n.members[name]
		changed := n.changed
		n.mu.Unlock()
		if ok && id != old {
			return nil
		}
		select {
		case <-grace.C:
			if _, ok := n.has(name); ok {
				return nil
			}
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: node %q has not come back (members: %s): restart it with the same name, cluster and peers: %w",
				ErrNode, name, strings.Join(n.Members(), ", "), ctx.Err())
		}
	}
}

// Leave ends the node's membership and shuts down the runtime's actor
// system (protoactor's cluster owns it from Join on); close the node's
// pipelines first. The node stops answering the provider's health checks
// and its remote stops, so the other nodes see it leave within their
// RefreshTTL (it does not gossip a graceful leave: see Join). Leave returns
// when ctx ends even if the shutdown has not finished.
func (n *Node) Leave(ctx context.Context) error {
	if err := ctxcheck.NotNil(ctx, "Node.Leave"); err != nil {
		return err
	}
	var err error
	n.leaveOnce.Do(func() {
		n.rt.System().EventStream.Unsubscribe(n.sub)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { _ = recover() }() // a half-started member may lack parts
			n.provider.Shutdown(true)
			n.cluster.Remote.Shutdown(false)
			n.rt.System().Shutdown()
		}()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("%w %q: leave: %w", ErrNode, n.cfg.Name, ctx.Err())
		}
	})
	return err
}
