//! Whether goals are turned on (G-5): every goal feature asks first.

use waymark_extension::SessionApi;
use waymark_extension::error::{Error, Result};

/// Refuses goal features when the flag is off (G-5).
pub(crate) fn check_enabled(api: &SessionApi) -> Result<()> {
    if api.config().beta.thread_goal {
        Ok(())
    } else {
        Err(Error::FeatureOff {
            setting: "beta.thread_goal",
            message: "goals are turned off (setting beta.thread_goal); existing goals are kept"
                .into(),
        })
    }
}
