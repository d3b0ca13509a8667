//go:build race

package homa_test

// raceBuild: the race detector slows the liveness seeds about tenfold, so
// TestNoRPCHangs runs a tenth of them under it.
const raceBuild = true
