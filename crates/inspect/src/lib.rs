//! ldplayer-inspect
