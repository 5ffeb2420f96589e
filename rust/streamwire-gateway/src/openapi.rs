//! `GET /openapi.json`: the OpenAPI 3.0 document of every endpoint, kept as a static file
//! (`openapi.json` at the crate root) so a reviewer reads it as it is served. The tests hold
//! it to the router both ways: every method and path the router serves is documented, and
//! every documented one is served.

/// The document, as served.
pub const DOCUMENT: &str = include_str!("../openapi.json");

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::Value;

    use super::DOCUMENT;
    use crate::route::{route, Route, PATHS, ROUTE_LABELS};

    fn doc() -> Value {
        serde_json::from_str(DOCUMENT).expect("openapi.json parses")
    }

    /// A concrete path for a template (`{domain}` → persistent, `{partition}` → 1).
    fn instance(template: &str) -> String {
        template
            .split('/')
            .map(|s| match s {
                "{domain}" => "persistent",
                "{partition}" => "1",
                s if s.starts_with('{') => "x",
                s => s,
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    #[test]
    fn the_document_is_openapi_3() {
        let d = doc();
        assert!(d["openapi"].as_str().unwrap().starts_with("3.0."));
        assert!(d["info"]["title"].is_string());
        assert!(d["paths"].as_object().is_some_and(|p| !p.is_empty()));
    }

    #[test]
    fn documented_paths_are_exactly_the_routers() {
        let d = doc();
        let mut documented = BTreeSet::new();
        for (path, item) in d["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                documented.insert((method.to_ascii_uppercase(), path.clone()));
            }
        }
        let served: BTreeSet<(String, String)> = PATHS
            .iter()
            .map(|(m, p)| (m.to_string(), p.to_string()))
            .collect();
        assert_eq!(served.len(), PATHS.len(), "PATHS has a duplicate");
        let missing: Vec<_> = served.difference(&documented).collect();
        let extra: Vec<_> = documented.difference(&served).collect();
        assert!(missing.is_empty(), "served, not documented: {missing:?}");
        assert!(extra.is_empty(), "documented, not served: {extra:?}");
    }

    #[test]
    fn every_template_routes_and_every_route_has_a_template() {
        let mut reached = BTreeSet::new();
        for (m, t) in PATHS {
            let r = route(m, &instance(t));
            assert!(
                !matches!(r, Route::NotFound | Route::WrongMethod),
                "{m} {t} routes to {r:?}"
            );
            reached.insert(r.label_index());
        }
        for (i, label) in ROUTE_LABELS.iter().enumerate() {
            if !matches!(*label, "wrong_method" | "not_found") {
                assert!(
                    reached.contains(&i),
                    "route {label} has no template in PATHS"
                );
            }
        }
    }

    #[test]
    fn every_operation_documents_its_path_parameters_and_refs_resolve() {
        let d = doc();
        let resolve = |v: &Value| -> Value {
            match v["$ref"].as_str() {
                Some(r) => d
                    .pointer(r.trim_start_matches('#'))
                    .unwrap_or_else(|| panic!("dangling $ref {r}"))
                    .clone(),
                None => v.clone(),
            }
        };
        for (path, item) in d["paths"].as_object().unwrap() {
            let want: BTreeSet<&str> = path
                .split('/')
                .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
                .collect();
            for (method, op) in item.as_object().unwrap() {
                let got: BTreeSet<String> = op["parameters"]
                    .as_array()
                    .map(|ps| {
                        ps.iter()
                            .map(resolve)
                            .filter(|p| p["in"] == "path")
                            .map(|p| p["name"].as_str().unwrap().to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                let got: BTreeSet<&str> = got.iter().map(String::as_str).collect();
                assert_eq!(got, want, "{method} {path}");
                let responses = op["responses"].as_object().unwrap();
                assert!(!responses.is_empty(), "{method} {path}");
                for r in responses.values() {
                    resolve(r);
                }
            }
        }
        // Every $ref anywhere resolves.
        fn refs(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::String(r)) = m.get("$ref") {
                        out.push(r.clone());
                    }
                    m.values().for_each(|x| refs(x, out));
                }
                Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        refs(&d, &mut all);
        for r in all {
            assert!(d.pointer(r.trim_start_matches('#')).is_some(), "{r}");
        }
    }

    #[test]
    fn the_fetch_stream_formats_are_the_documented_ones() {
        let d = doc();
        for (_, path) in PATHS
            .iter()
            .filter(|(m, p)| *m == "GET" && p.contains("/consumer"))
        {
            let op = &d["paths"][*path]["get"];
            let stream = op["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == "stream")
                .unwrap_or_else(|| panic!("{path} documents no stream parameter"));
            let documented: Vec<&str> = stream["schema"]["enum"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert_eq!(documented, crate::fetch_stream::FORMATS, "{path}");
            for f in crate::fetch_stream::FORMATS {
                let framing = crate::fetch_stream::StreamParams::parse(
                    &format!("stream={f}"),
                    None,
                    std::time::Duration::from_secs(1),
                )
                .unwrap()
                .framing;
                assert!(
                    op["responses"]["200"]["content"][framing.content_type()].is_object(),
                    "{path}: {} is not documented",
                    framing.content_type()
                );
            }
        }
    }
}
