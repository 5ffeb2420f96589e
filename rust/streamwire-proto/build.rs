//! Generates Rust types from `proto/pulsar.proto` with prost.
//!
//! protoc comes from `protoc-bin-vendored`, so neither developers nor CI need a
//! system protoc. `PROTOC` set in the environment still wins, which lets a
//! platform without a vendored binary point at its own.

use std::path::PathBuf;

const TYPE_MESSAGE: i32 = 11;

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let proto_dir = manifest_dir.join("../../proto");
    let proto_file = proto_dir.join("pulsar.proto");
    println!("cargo:rerun-if-changed={}", proto_file.display());
    println!("cargo:rerun-if-env-changed=PROTOC");

    if std::env::var_os("PROTOC").is_none() {
        let protoc = protoc_bin_vendored::protoc_bin_path()
            .expect("vendored protoc binary for this platform");
        // prost-build finds protoc through this variable.
        std::env::set_var("PROTOC", protoc);
    }

    let mut config = prost_build::Config::new();
    // Every `bytes` field becomes `bytes::Bytes`: decoding from a `Bytes` buffer then
    // slices it instead of copying (auth data, schema versions, ordering keys).
    config.bytes(["."]);

    let fds = config
        .load_fds(&[&proto_file], &[&proto_dir])
        .expect("protoc failed to parse proto/pulsar.proto");

    // BaseCommand has ~65 optional sub-command fields and exactly one is set per
    // frame. Stored inline, the struct would be several KB and every frame moved
    // through a channel would memcpy all of it; boxed, it is one pointer per field.
    for file in &fds.file {
        for message in &file.message_type {
            if message.name() != "BaseCommand" {
                continue;
            }
            for field in &message.field {
                // 11 is TYPE_MESSAGE in descriptor.proto; comparing the raw value avoids
                // a direct dependency on prost-types just to name the enum.
                if field.r#type == Some(TYPE_MESSAGE) {
                    config.boxed(format!(".{}.BaseCommand.{}", file.package(), field.name()));
                }
            }
        }
    }

    config
        .compile_fds(fds)
        .expect("prost code generation failed");
}
