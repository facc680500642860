//! Traffic generator: writes pcap files for tests, demo and benchmarks.
