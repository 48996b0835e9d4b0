//! Signing in, as ACP has it. Waymark has no account of its own: a session reaches its model
//! with the provider's key, from the environment (or, in the app, the system keyring). The
//! one method offered is of the `agent` kind: `authenticate` checks that the key the model
//! the sessions would use needs is set (not that the provider takes it: that would cost a
//! call), and its error says which one is missing. A new session is refused with
//! `auth_required` on the same check, so the editor offers the method instead of a prompt
//! failing later; a model that cannot be set up at all (none chosen, a bad spec) is an
//! ordinary error, which signing in could not mend. A session loaded or resumed keeps its
//! own model and is not checked: its history shows without a key.

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

/// Whether a new session would have what `model` (else the settings' model) needs:
/// `auth_required` naming the key that is not set, another error when the model itself
/// cannot be set up.
pub(crate) fn ready(runtime: &Runtime, model: Option<&str>) -> Result<(), Error> {
    match runtime.model_ready(model) {
        Ok(_) => Ok(()),
        Err(e) if e.code() == "auth" => Err(Error::auth_required().data(e.to_string())),
        Err(e) => Err(Error::internal_error().data(e.to_string())),
    }
}
