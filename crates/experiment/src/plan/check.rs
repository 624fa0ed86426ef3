//! Range checks of single values, shared by the sections and `[vary]`: each returns the value
//! or a sentence saying what it must be.

/// A share: a number in [0, 1].
pub(super) fn share(x: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(format!("{x} is not a share: it must lie between 0 and 1"))
    }
}

/// A loss probability: a number in [0, 1).
pub(super) fn loss(x: f64) -> Result<f64, String> {
    if (0.0..1.0).contains(&x) {
        Ok(x)
    } else {
        Err(format!(
            "{x} is no loss probability: it must be at least 0 and below 1"
        ))
    }
}

/// A finite number at least 0 (a time, a delay).
pub(super) fn non_negative(x: f64) -> Result<f64, String> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(format!("{x}: must be a finite number, at least 0"))
    }
}

/// A finite number above 0 (a rate, a factor).
pub(super) fn positive(x: f64) -> Result<f64, String> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(format!("{x}: must be a finite number above 0"))
    }
}

/// A mean burst length in packets: at least 1.
pub(super) fn burst_len(x: f64) -> Result<f64, String> {
    if x.is_finite() && x >= 1.0 {
        Ok(x)
    } else {
        Err(format!("{x}: a mean burst length is at least 1 packet"))
    }
}

/// A count of at least 1 (threads, repeats).
pub(super) fn at_least_one<T: PartialOrd + From<u8> + std::fmt::Display>(
    x: T,
) -> Result<T, String> {
    if x >= T::from(1) {
        Ok(x)
    } else {
        Err(format!("{x}: must be at least 1"))
    }
}
