//! Generates the controller's gRPC client from `proto/pravega_controller.proto` (our own
//! description of the RPCs a data client uses) with tonic + prost.
//!
//! protoc comes from `protoc-bin-vendored`, so neither developers nor CI need a system protoc;
//! `PROTOC` set in the environment still wins (a platform without a vendored binary).

use std::path::PathBuf;

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let proto_dir = manifest_dir.join("../../proto");
    let proto_file = proto_dir.join("pravega_controller.proto");
    println!("cargo:rerun-if-changed={}", proto_file.display());
    println!("cargo:rerun-if-env-changed=PROTOC");

    if std::env::var_os("PROTOC").is_none() {
        let protoc = protoc_bin_vendored::protoc_bin_path()
            .expect("vendored protoc binary for this platform");
        // prost-build (under tonic-prost-build) finds protoc through this variable.
        std::env::set_var("PROTOC", protoc);
    }

    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .compile_protos(&[&proto_file], &[&proto_dir])
        .expect("tonic code generation for proto/pravega_controller.proto failed");
}
