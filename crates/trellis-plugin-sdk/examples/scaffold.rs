// The plugin `trellis plugin new NAME --lang rust` writes, compiled here so the template
// always builds against this SDK.
include!("../../trellis/templates/rust/main.rs");
