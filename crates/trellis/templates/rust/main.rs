// A Trellis plugin: a sidebar section listing failed commands.
use trellis_plugin_sdk::{
    Host, Init, Plugin, Registration, SectionBody, SectionDecl, SectionRow, Value, run,
};

#[derive(Default)]
struct Failed(Vec<(String, String)>);

impl Plugin for Failed {
    fn registration(&mut self, _init: &Init) -> Registration {
        Registration {
            subscriptions: Some(vec!["tool_call_updated".into()]),
            sections: vec![SectionDecl {
                id: "failed".into(),
                title: "Failed commands".into(),
                max_rows: 10,
                collapsed: false,
            }],
            ..Registration::default()
        }
    }

    fn on_event(&mut self, event: &Value, host: &mut Host) -> Result<(), String> {
        let call = &event["call"];
        if call["status"] == "failed" {
            let id = call["id"].as_str().unwrap_or_default().to_string();
            self.0.push((id, call["title"].as_str().unwrap_or_default().to_string()));
            let rows = self.0.iter().map(|(id, t)| SectionRow::clickable(t.as_str(), id.clone())).collect();
            host.set_section("failed", &SectionBody { rows, count: Some(self.0.len()) })
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

fn main() -> std::io::Result<()> {
    run(Failed::default())
}
