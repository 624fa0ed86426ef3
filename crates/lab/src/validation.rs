//! DNSSEC validation in the lab: the trust anchor of the emulated root and the moment the
//! resolver believes it is, shared with the experiments' resolvers
//! ([`ldplayer_servers::validation`]).

pub use ldplayer_servers::validation::*;

impl From<ValidationError> for crate::LabError {
    fn from(e: ValidationError) -> Self {
        crate::LabError::Input(e.to_string())
    }
}
