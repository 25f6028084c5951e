// Package ext is runtime's one extension point for its sub-packages
// (runtime/group, runtime/cluster, runtime/collective): the hooks they
// need of a Runtime and no user does, typed (Host), and Of, which finds a
// runtime's. Package runtime registers them on its actor system under
// extid.ID, as protoactor's remote registers its extension, so they stay
// out of runtime's public API; being internal, ext is imported only by
// runtime's sub-packages (internal/deps checks it).
package ext
