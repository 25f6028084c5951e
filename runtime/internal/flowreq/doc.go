// Package flowreq is Request for a flow made of pipelines (a stage group,
// a cluster pipeline): an id from the flow's account, a wait in its table
// of requests for the message's outcome, and that outcome as a result or a
// *runtime.RequestError. It imports runtime (its Data, Result and
// DeadLetter), so runtime itself never imports it; runtime.Pipeline keeps
// its own.
package flowreq
