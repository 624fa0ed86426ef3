//! ldplayer-synth
