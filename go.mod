module github.com/chronos-timer/chronos

go 1.26

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/benbjohnson/clock v1.3.5 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/twmb/murmur3 v1.2.2 // indirect
	gopkg.in/ini.v1 v1.67.3 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
