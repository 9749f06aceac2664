//! JSON request bodies as every endpoint reads them. JSON has one number type, so a
//! whole number written `5.0` is the integer 5 here (JSON Schema's `integer` allows it,
//! and JavaScript clients send it); serde alone would refuse it for an integer field.
//! That needs floats read exactly: serde_json's `float_roundtrip` (set in the workspace's
//! Cargo.toml), without which `1857599720877799.0` reads as `1857599720877799.2`.
//! A refused body answers 413, 415 or 400 with the reason, never a 500.

use super::ApiError;
use axum::extract::rejection::JsonRejection;
use axum::Json;
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

/// The body as `T`, or the error answer saying what is wrong with it.
pub fn read<T: DeserializeOwned>(
    parsed: Result<Json<Value>, JsonRejection>,
) -> Result<T, ApiError> {
    let Json(mut value) = parsed.map_err(|e| ApiError::body_rejected(e.status(), e.body_text()))?;
    whole_numbers_as_integers(&mut value);
    // Read back through axum's reader: its errors name the field (`by: invalid type`).
    let bytes = serde_json::to_vec(&value).unwrap_or_default();
    Json::<T>::from_bytes(&bytes)
        .map(|Json(v)| v)
        .map_err(|e| ApiError::body_rejected(e.status(), e.body_text()))
}

/// Rewrites every float without a fraction that fits an integer type as that integer
/// (below 2^64, above -2^63; anything else stays a float and is refused). The bounds
/// are strict on both sides: a float read as exactly ±2^63 or 2^64 may be an integer
/// past the type's end rounded onto it (`-9223372036854775809` parses as -2^63), and
/// the integers at the ends themselves are read as integers, not floats.
fn whole_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) {
                if f >= 0.0 && f < u64::MAX as f64 {
                    *n = Number::from(f as u64);
                } else if f < 0.0 && f > i64::MIN as f64 {
                    *n = Number::from(f as i64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_floats_become_integers_and_the_rest_stays() {
        let mut value = json!({"a": 5.0, "b": [-3.0, 2.5], "c": 7, "d": 1e300, "e": "5.0"});
        whole_numbers_as_integers(&mut value);
        assert_eq!(
            value,
            json!({"a": 5, "b": [-3, 2.5], "c": 7, "d": 1e300, "e": "5.0"})
        );
        assert!(value["a"].is_u64() && value["b"][0].is_i64());
        // 2^64 is past u64::MAX: it stays a float, and an integer field refuses it.
        let mut too_big = json!(18446744073709551616.0);
        whole_numbers_as_integers(&mut too_big);
        assert!(too_big.is_f64());
        // One below i64::MIN rounds onto -2^63 as a float: it must not become i64::MIN.
        let mut too_small: Value = serde_json::from_str("-9223372036854775809").unwrap();
        whole_numbers_as_integers(&mut too_small);
        assert!(too_small.is_f64());
        let mut min: Value = serde_json::from_str("-9223372036854775808").unwrap();
        whole_numbers_as_integers(&mut min);
        assert_eq!(min.as_i64(), Some(i64::MIN));
    }
}
