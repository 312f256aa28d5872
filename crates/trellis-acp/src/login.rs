//! Logging in: which of the agent's `authMethods` to use when setup says authentication
//! is required, and the login a `terminal` method asks the front end to run (the agent's
//! own command with the method's arguments and environment added, in the user's
//! terminal, without `authenticate`).

use agent_client_protocol::v1::schema::AuthMethod;

/// A login to run in the user's terminal.
#[derive(Debug, Clone, PartialEq)]
pub struct Login {
    pub method: String,
    /// The method's name and description, as the agent gave them.
    pub name: String,
    pub description: Option<String>,
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl Login {
    /// The command as a person would type it (for messages; quoted where needed).
    pub fn command_line(&self) -> String {
        let env = self
            .env
            .iter()
            .map(|(k, v)| format!("{}={}", quote(k), quote(v)));
        let words = std::iter::once(&self.program)
            .chain(&self.args)
            .map(|w| quote(w));
        env.chain(words).collect::<Vec<_>>().join(" ")
    }
}

/// `w` as one POSIX shell word.
fn quote(w: &str) -> String {
    if !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// How to log in.
#[derive(Debug)]
pub(crate) enum Chosen {
    /// `authenticate` with this method id.
    Agent(String),
    /// Run this in the terminal.
    Terminal(Login),
}

/// The method named by the configuration (`auth_method`), else the agent's first; a
/// `terminal` one becomes the login to run (`command`, `args`, `env`: how the agent was
/// started).
pub(crate) fn chosen_method(
    methods: &[AuthMethod],
    configured: Option<&str>,
    command: &str,
    args: &[String],
    env: &[(String, String)],
) -> Chosen {
    let method = match configured {
        Some(id) => methods.iter().find(|m| m.id().to_string() == id),
        None => methods.first(),
    };
    match method {
        Some(AuthMethod::Terminal(t)) => {
            let mut extra: Vec<(String, String)> =
                t.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            extra.sort();
            // The method's variables override the agent's own.
            let mut all: Vec<(String, String)> = env
                .iter()
                .filter(|(k, _)| !extra.iter().any(|(x, _)| x == k))
                .cloned()
                .collect();
            all.extend(extra);
            Chosen::Terminal(Login {
                method: t.id.to_string(),
                name: t.name.clone(),
                description: t.description.clone(),
                program: command.to_string(),
                args: args.iter().chain(&t.args).cloned().collect(),
                env: all,
            })
        }
        Some(m) => Chosen::Agent(m.id().to_string()),
        // A configured id the agent did not list is tried all the same.
        None => Chosen::Agent(configured.unwrap_or_default().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{AuthMethodAgent, AuthMethodTerminal};
    use std::collections::HashMap;

    #[test]
    fn a_terminal_method_runs_the_agent_with_its_arguments_and_environment() {
        let methods = vec![
            AuthMethod::Terminal(
                AuthMethodTerminal::new("tui", "Log in")
                    .args(vec!["--login".into(), "it's".into()])
                    .env(HashMap::from([("MODE".into(), "login".into())])),
            ),
            AuthMethod::Agent(AuthMethodAgent::new("key", "API key")),
        ];
        let env = vec![
            ("MODE".into(), "serve".into()),
            ("HOME".into(), "/h".into()),
        ];
        let Chosen::Terminal(l) = chosen_method(&methods, None, "agent", &["acp".into()], &env)
        else {
            panic!("not a terminal login")
        };
        assert_eq!(l.args, ["acp", "--login", "it's"]);
        assert_eq!(
            l.env,
            [
                ("HOME".into(), "/h".into()),
                ("MODE".into(), "login".into())
            ]
        );
        assert_eq!(
            l.command_line(),
            "HOME=/h MODE=login agent acp --login 'it'\\''s'"
        );
        // Named by the configuration: that one, whatever the order.
        let c = chosen_method(&methods, Some("key"), "agent", &[], &[]);
        assert!(matches!(c, Chosen::Agent(id) if id == "key"));
        let c = chosen_method(&methods, Some("other"), "agent", &[], &[]);
        assert!(matches!(c, Chosen::Agent(id) if id == "other"));
    }
}
