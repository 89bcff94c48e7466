//! The checked-in OpenAPI document must be what the code generates.

#[test]
fn checked_in_openapi_matches_the_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk-openapi/openapi.json");
    let checked_in = std::fs::read_to_string(path).expect("sdk-openapi/openapi.json exists");
    let generated = sluice_api::openapi::document_text();
    assert!(
        checked_in == generated,
        "sdk-openapi/openapi.json is stale: regenerate it with `cargo run -p sluice-cli -- openapi > sdk-openapi/openapi.json`"
    );
}
