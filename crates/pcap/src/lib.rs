//! ldplayer-pcap
