module github.com/chronos-timer/chronos

go 1.26

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/benbjohnson/clock v1.3.5
	github.com/cockroachdb/datadriven v1.0.3
	github.com/twmb/murmur3 v1.2.2
	gopkg.in/ini.v1 v1.67.3
	pgregory.net/rapid v1.3.0
)

require (
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)
