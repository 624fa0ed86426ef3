//! ldplayer-mutate
