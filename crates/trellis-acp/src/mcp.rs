//! MCP servers offered to the agent in `session/new` / `session/load`: from the user's
//! config and from enabled plugin packages' `mcp.json`. Stdio servers are offered to every
//! agent (ACP requires them); http and sse servers only to agents that advertise them in
//! `mcpCapabilities`. What is not offered is reported, never dropped silently.

use agent_client_protocol::v1::schema::{
    EnvVariable, HttpHeader, McpCapabilities, McpServer, McpServerHttp, McpServerSse,
    McpServerStdio,
};

/// How an MCP server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    Sse {
        url: String,
        headers: Vec<(String, String)>,
    },
}

impl McpTransport {
    pub fn name(&self) -> &'static str {
        match self {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "http",
            McpTransport::Sse { .. } => "sse",
        }
    }
}

/// One server to offer.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerSpec {
    pub name: String,
    /// Where it comes from: `config`, `plugin NAME`.
    pub origin: String,
    pub transport: McpTransport,
}

/// What became of one server at session setup.
#[derive(Debug, Clone, PartialEq)]
pub struct McpOffer {
    pub name: String,
    pub origin: String,
    pub transport: &'static str,
    /// `None`: offered; else why not.
    pub refused: Option<String>,
}

impl McpOffer {
    pub fn line(&self) -> String {
        match &self.refused {
            None => format!(
                "{} ({}, from {}): offered to the agent",
                self.name, self.transport, self.origin
            ),
            Some(why) => format!(
                "{} ({}, from {}): not offered — {why}",
                self.name, self.transport, self.origin
            ),
        }
    }
}

/// The servers the agent can take, in the SDK's form, and what became of each.
pub fn offer(servers: &[McpServerSpec], caps: &McpCapabilities) -> (Vec<McpServer>, Vec<McpOffer>) {
    let mut out = Vec::new();
    let mut report = Vec::new();
    let mut names = std::collections::HashSet::new();
    for s in servers {
        let refused = if !names.insert(s.name.clone()) {
            Some("another server has this name".to_string())
        } else {
            match &s.transport {
                McpTransport::Stdio { command, args, env } => {
                    out.push(McpServer::Stdio(
                        McpServerStdio::new(s.name.clone(), command.clone())
                            .args(args.clone())
                            .env(
                                env.iter()
                                    .map(|(k, v)| EnvVariable::new(k.clone(), v.clone()))
                                    .collect(),
                            ),
                    ));
                    None
                }
                McpTransport::Http { url, headers } if caps.http => {
                    out.push(McpServer::Http(
                        McpServerHttp::new(s.name.clone(), url.clone())
                            .headers(header_list(headers)),
                    ));
                    None
                }
                McpTransport::Sse { url, headers } if caps.sse => {
                    out.push(McpServer::Sse(
                        McpServerSse::new(s.name.clone(), url.clone())
                            .headers(header_list(headers)),
                    ));
                    None
                }
                t => Some(format!(
                    "the agent does not take {} MCP servers (its mcpCapabilities)",
                    t.name()
                )),
            }
        };
        report.push(McpOffer {
            name: s.name.clone(),
            origin: s.origin.clone(),
            transport: s.transport.name(),
            refused,
        });
    }
    (out, report)
}

fn header_list(h: &[(String, String)]) -> Vec<HttpHeader> {
    h.iter()
        .map(|(k, v)| HttpHeader::new(k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, t: McpTransport) -> McpServerSpec {
        McpServerSpec {
            name: name.into(),
            origin: "config".into(),
            transport: t,
        }
    }

    #[test]
    fn stdio_always_remote_only_when_advertised_duplicates_never() {
        let servers = vec![
            spec(
                "files",
                McpTransport::Stdio {
                    command: "mcp-files".into(),
                    args: vec![],
                    env: vec![],
                },
            ),
            spec(
                "docs",
                McpTransport::Http {
                    url: "https://docs.example/mcp".into(),
                    headers: vec![],
                },
            ),
            spec(
                "old",
                McpTransport::Sse {
                    url: "https://old.example/sse".into(),
                    headers: vec![],
                },
            ),
            spec(
                "files",
                McpTransport::Stdio {
                    command: "other".into(),
                    args: vec![],
                    env: vec![],
                },
            ),
        ];
        let (out, report) = offer(&servers, &McpCapabilities::default());
        assert_eq!(out.len(), 1);
        let refused: Vec<bool> = report.iter().map(|r| r.refused.is_some()).collect();
        assert_eq!(refused, [false, true, true, true]);
        let (out, _) = offer(&servers, &McpCapabilities::new().http(true).sse(true));
        assert_eq!(out.len(), 3);
    }
}
