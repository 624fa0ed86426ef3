//! Portable `ln`, `exp` and `pow` built from IEEE 754 basic operations only.
//!
//! `f64::ln` and friends call the platform's math library, whose last-bit results differ between
//! glibc, musl, macOS and Windows. The synthesizer promises the same trace for the same seed on
//! every platform, so everything it computes from random numbers uses these functions instead:
//! addition, multiplication, division and rounding are correctly rounded everywhere, so the
//! results below are bit-identical on every platform. They are accurate to a few ulps, which is
//! plenty for drawing inter-arrival times and client weights.

/// ln 2 split as in fdlibm: the high part has trailing zero bits so `k * LN2_HI` is exact.
/// (Bit patterns 0x3fe62e42fee00000 and 0x3dea39ef35793c76; checked in the tests.)
const LN2_HI: f64 = 0.693_147_180_369_123_8;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
const SQRT2: f64 = std::f64::consts::SQRT_2;
const INV_LN2: f64 = std::f64::consts::LOG2_E;

/// Natural logarithm of `x`; `-inf` for zero, NaN for negative or NaN input, `+inf` for `+inf`.
pub fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    let mut bits = x.to_bits();
    let mut exp = ((bits >> 52) & 0x7ff) as i64;
    if exp == 0 {
        // Subnormal: scale by 2^54 into the normal range.
        bits = (x * f64::from_bits((1023 + 54) << 52)).to_bits();
        exp = ((bits >> 52) & 0x7ff) as i64 - 54;
    }
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let mut k = exp - 1023;
    if m > SQRT2 {
        m *= 0.5;
        k += 1;
    }
    // ln(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), |s| <= 0.1716.
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut poly = 0.0;
    let mut n = 29.0;
    while n > 1.0 {
        poly = poly * s2 + 1.0 / n;
        n -= 2.0;
    }
    let series = 2.0 * s * (1.0 + s2 * poly);
    let kf = k as f64;
    kf * LN2_HI + (kf * LN2_LO + series)
}

/// `e` raised to `x`; 0 below the smallest subnormal, `+inf` above the largest finite value.
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x > 709.782_712_893_384 {
        return f64::INFINITY;
    }
    if x < -745.2 {
        return 0.0;
    }
    let k = (x * INV_LN2).round();
    let r = (x - k * LN2_HI) - k * LN2_LO;
    // Taylor series of e^r, |r| <= 0.3466: the degree-16 term is below 1e-19.
    let mut poly = 1.0;
    let mut n = 16.0;
    while n >= 1.0 {
        poly = 1.0 + poly * r / n;
        n -= 1.0;
    }
    scale_pow2(poly, k as i64)
}

/// `x` raised to `y` for positive `x`.
pub fn pow(x: f64, y: f64) -> f64 {
    exp(y * ln(x))
}

/// `v * 2^k` for `v` near 1, exact unless the result is subnormal.
fn scale_pow2(v: f64, k: i64) -> f64 {
    let two_to = |e: i64| f64::from_bits(((e + 1023) as u64) << 52);
    if k > 1023 {
        v * two_to(1023) * two_to(k - 1023)
    } else if k < -1022 {
        v * two_to(-1022) * two_to((k + 1022).max(-1022))
    } else {
        v * two_to(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        a == b || ((a - b) / b).abs() < 4e-16 || (a - b).abs() < 1e-300
    }

    #[test]
    fn constants_are_exact() {
        assert_eq!(LN2_HI.to_bits(), 0x3fe6_2e42_fee0_0000);
        assert_eq!(LN2_LO.to_bits(), 0x3dea_39ef_3579_3c76);
    }

    #[test]
    fn ln_matches_std() {
        let mut x = 1e-310;
        while x < 1e300 {
            assert!(close(ln(x), x.ln()), "ln({x}) = {} vs {}", ln(x), x.ln());
            x *= 1.37;
        }
        for x in [
            0.5, 1.0, 2.0, 0.999_999, 1.000_001, 1.414, 1.415, 1e-300, 3e-320,
        ] {
            assert!(close(ln(x), x.ln()), "ln({x}) = {} vs {}", ln(x), x.ln());
        }
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert!(ln(-1.0).is_nan());
    }

    #[test]
    fn exp_matches_std() {
        let mut x = -740.0;
        while x < 709.0 {
            assert!(
                close(exp(x), x.exp()),
                "exp({x}) = {} vs {}",
                exp(x),
                x.exp()
            );
            x += 0.731;
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(1000.0), f64::INFINITY);
        assert_eq!(exp(-1000.0), 0.0);
    }

    #[test]
    fn pow_matches_std() {
        for i in 1..10_000 {
            let x = i as f64;
            let (a, b) = (pow(x, -1.25), x.powf(-1.25));
            assert!(((a - b) / b).abs() < 1e-14, "{x}: {a} vs {b}");
        }
    }
}
