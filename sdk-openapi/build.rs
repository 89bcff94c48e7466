//! Generates the client from `openapi.json` with progenitor. The document
//! is OpenAPI 3.1 (as utoipa writes it) and progenitor reads 3.0, so it is
//! first rewritten into the 3.0 forms of the same schemas: `type: [T,
//! "null"]` becomes `type: T, nullable: true`, and a `oneOf` offering
//! `null` becomes the other choice, nullable. Patterns are left to the
//! server, which checks them and names the field it refuses. An operation
//! that answers either JSON or a stream, by `Accept` (an exec), keeps its
//! JSON answer here: a typed operation has one type of answer, and the
//! stream has a route of its own (`stream_run`).

use std::path::PathBuf;

use serde_json::{Map, Value, json};

fn main() {
    let source = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("openapi.json");
    println!("cargo:rerun-if-changed={}", source.display());
    let text = std::fs::read_to_string(&source).expect("openapi.json is readable");
    let mut document: Value = serde_json::from_str(&text).expect("openapi.json is JSON");
    to_openapi_3_0(&mut document);
    let spec: openapiv3::OpenAPI = serde_json::from_value(document).expect("the rewritten document is OpenAPI 3.0");
    let mut settings = progenitor::GenerationSettings::default();
    settings.with_interface(progenitor::InterfaceStyle::Builder).with_tag(progenitor::TagStyle::Merged);
    let mut generator = progenitor::Generator::new(&settings);
    let tokens = generator.generate_tokens(&spec).expect("progenitor generates the client");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("client.rs");
    std::fs::write(out, tokens.to_string()).expect("the generated client is written");
}

/// Rewrites a 3.1 document into 3.0 in place.
fn to_openapi_3_0(document: &mut Value) {
    document["openapi"] = json!("3.0.3");
    if let Some(license) = document.pointer_mut("/info/license").and_then(Value::as_object_mut) {
        license.remove("identifier");
    }
    rewrite(document);
    // A parameter that may be left out is optional already: its schema
    // saying `null` too would make it optional twice.
    let paths = document.get_mut("paths").and_then(Value::as_object_mut);
    for path in paths.into_iter().flat_map(|p| p.values_mut()) {
        for operation in path.as_object_mut().into_iter().flat_map(|o| o.values_mut()) {
            json_answers_only(operation);
            let parameters = operation.get_mut("parameters").and_then(Value::as_array_mut);
            for parameter in parameters.into_iter().flatten() {
                if let Some(schema) = parameter.get_mut("schema").and_then(Value::as_object_mut) {
                    schema.remove("nullable");
                }
            }
        }
    }
}

/// Drops an operation's stream answers where it also succeeds with JSON;
/// a stream left is read as bytes (its events' schema is documentation
/// for the reader, not a body progenitor could decode). A body of bytes
/// is `format: binary`, as 3.0 says it.
fn json_answers_only(operation: &mut Value) {
    // A body of bytes of any kind (a file, a tar archive) is sent as
    // octet-stream bytes, which progenitor knows.
    if let Some(bodies) = operation.pointer_mut("/requestBody/content").and_then(Value::as_object_mut) {
        let bytes: Vec<String> = bodies.keys().filter(|m| *m != "application/json").cloned().collect();
        for media in bytes {
            bodies.remove(&media);
            bodies.insert("application/octet-stream".into(), json!({"schema": {"type": "string", "format": "binary"}}));
        }
    }
    let Some(responses) = operation.get_mut("responses").and_then(Value::as_object_mut) else { return };
    for response in responses.values_mut() {
        if let Some(stream) = response.pointer_mut("/content/text~1event-stream") {
            stream["schema"] = json!({"type": "string"});
        }
    }
    let media = |r: &Value, m: &str| r.pointer(&format!("/content/{}", m.replace('/', "~1"))).is_some();
    let succeeds_with_json =
        responses.iter().any(|(status, r)| status.starts_with('2') && media(r, "application/json"));
    if succeeds_with_json {
        responses.retain(|status, r| !(status.starts_with('2') && media(r, "text/event-stream")));
    }
}

fn rewrite(value: &mut Value) {
    match value {
        Value::Object(object) => {
            schema_3_0(object);
            for child in object.values_mut() {
                rewrite(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite),
        _ => {}
    }
}

fn schema_3_0(object: &mut Map<String, Value>) {
    // `type: [T, "null"]`: a nullable T.
    if let Some(Value::Array(types)) = object.get("type") {
        let nullable = types.iter().any(|t| t == "null");
        let others: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        match others.as_slice() {
            [one] => {
                object.insert("type".into(), one.clone());
            }
            _ => {
                object.remove("type");
            }
        }
        if nullable {
            object.insert("nullable".into(), json!(true));
        }
    }
    // `oneOf: [{type: null}, X]`: a nullable X.
    if let Some(Value::Array(choices)) = object.get("oneOf") {
        let is_null = |c: &Value| c.get("type") == Some(&json!("null"));
        if choices.iter().any(is_null) {
            let others: Vec<Value> = choices.iter().filter(|c| !is_null(c)).cloned().collect();
            object.remove("oneOf");
            match others.len() {
                1 => {
                    object.insert("allOf".into(), json!(others));
                }
                _ => {
                    object.insert("oneOf".into(), json!(others));
                }
            }
            object.insert("nullable".into(), json!(true));
        }
    }
    // Keywords 3.0 has not.
    for key in ["examples", "contentMediaType", "contentEncoding", "$schema"] {
        if object.get(key).is_some_and(|v| !v.is_object() || key != "examples") {
            object.remove(key);
        }
    }
    // The server checks patterns (and names the field); the client leaves
    // them to it rather than carry a second regular-expression engine.
    if object.get("pattern").is_some_and(Value::is_string) {
        object.remove("pattern");
    }
    if let Some(constant) = object.remove("const") {
        object.insert("enum".into(), json!([constant]));
    }
}
