package engine

// Version is the engine's version, recorded in checkpoints. It changes when a layer's
// arithmetic or parameter layout changes, so that a checkpoint says which engine made it.
const Version = "0.2.0"
