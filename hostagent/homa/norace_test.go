//go:build !race

package homa_test

const raceBuild = false
