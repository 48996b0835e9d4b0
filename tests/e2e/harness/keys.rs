//! Real key events in the window: single keys, chords, Shift+Tab, and the Plan chip.

use super::App;

impl App {
    /// Presses `key` in the focused element (a real key event).
    pub async fn press(&self, key: fantoccini::key::Key) {
        use fantoccini::actions::{InputSource, KeyAction, KeyActions};
        let keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: key.into() })
            .then(KeyAction::Up { value: key.into() });
        self.client.perform_actions(keys).await.unwrap();
    }

    /// Types the one character `c` where the focus is (a real key event: `?`, a digit).
    pub async fn press_char(&self, c: char) {
        use fantoccini::actions::{InputSource, KeyAction, KeyActions};
        let keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: c })
            .then(KeyAction::Up { value: c });
        self.client.perform_actions(keys).await.unwrap();
    }

    /// Presses Shift+Tab in the focused element (real key events, modifier held).
    pub async fn shift_tab(&self) {
        use fantoccini::actions::{InputSource, KeyAction, KeyActions};
        use fantoccini::key::Key;
        let keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down {
                value: Key::Shift.into(),
            })
            .then(KeyAction::Down {
                value: Key::Tab.into(),
            })
            .then(KeyAction::Up {
                value: Key::Tab.into(),
            })
            .then(KeyAction::Up {
                value: Key::Shift.into(),
            });
        self.client.perform_actions(keys).await.unwrap();
    }

    /// Presses `key` with `modifier` held (Ctrl+B, say), as real key events.
    pub async fn chord(&self, modifier: fantoccini::key::Key, key: char) {
        use fantoccini::actions::{InputSource, KeyAction, KeyActions};
        let keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down {
                value: modifier.into(),
            })
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key })
            .then(KeyAction::Up {
                value: modifier.into(),
            });
        self.client.perform_actions(keys).await.unwrap();
    }

    /// Sends `text` from the composer with the Plan chip armed (Shift+Tab).
    pub async fn send_with_plan_chip(&self, text: &str) {
        self.el("[data-testid=composer]")
            .await
            .click()
            .await
            .unwrap();
        self.shift_tab().await;
        self.el("[data-testid=plan-chip]").await;
        self.type_into("[data-testid=composer]", &format!("{text}\u{E007}"))
            .await;
    }
}
