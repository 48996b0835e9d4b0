//! Signing in, as ACP has it. Waymark has no account of its own: a session reaches its model
//! with the provider's key, from the environment (or, in the app, the system keyring). The
//! one method offered is of the `agent` kind: `authenticate` checks that the model the
//! sessions would use can be reached that way, and its error says what to set when not. A
//! new session is refused with `auth_required` on the same check, so the editor offers the
//! method instead of a prompt failing later.

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema as acp;
use waymark_runtime::Runtime;

/// The id of the one sign-in method.
pub(crate) const METHOD: &str = "provider-key";

/// The sign-in method `initialize` offers.
pub(crate) fn method() -> acp::AuthMethod {
    acp::AuthMethod::Agent(
        acp::AuthMethodAgent::new(METHOD, "Model provider key").description(
            "Waymark calls the model with its provider's key, read from the environment \
             (OPENAI_API_KEY, ANTHROPIC_API_KEY, or the variable the settings name) where \
             the editor starts it. Signing in checks that the key is there.",
        ),
    )
}

/// Whether a new session could reach `model` (else the settings' model); `auth_required`,
/// saying what is missing, when it could not.
pub(crate) fn ready(runtime: &Runtime, model: Option<&str>) -> Result<(), Error> {
    match runtime.model_ready(model) {
        Ok(_) => Ok(()),
        Err(e) => Err(Error::auth_required().data(e.to_string())),
    }
}
