//! Property tests: both stream parsers and the scripted model's format fed extreme numbers
//! (u64/i64 limits, huge and negative floats) in every numeric field. The only outcomes
//! allowed are a reply whose usage is within [`MAX_CALL_TOKENS`] or a typed error; never a
//! panic.

use super::anthropic::EventFolder;
use super::http::StreamFold as _;
use super::openai::ChunkFolder;
use super::*;
use proptest::prelude::*;

fn extreme() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("18446744073709551615".to_string()),
        Just("18446744073709551616".to_string()),
        Just("-9223372036854775808".to_string()),
        Just("9223372036854775807".to_string()),
        Just("1e308".to_string()),
        Just("-1e308".to_string()),
        Just("-0.0".to_string()),
        Just("0.5".to_string()),
        Just("null".to_string()),
        Just("\"12\"".to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        (0u64..200_000_000).prop_map(|n| n.to_string()),
    ]
}

fn check(r: Result<ModelResponse, ProviderError>) -> Result<(), TestCaseError> {
    match r {
        Ok(reply) => {
            prop_assert!(reply.usage.input_tokens <= 3 * MAX_CALL_TOKENS);
            prop_assert!(reply.usage.output_tokens <= MAX_CALL_TOKENS);
        }
        Err(e) => prop_assert!(!e.message.is_empty()),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn openai_chunks_with_extreme_numbers(a in extreme(), b in extreme(), c in extreme(), idx in extreme()) {
        let sink = |_: StreamEvent| {};
        let mut f = ChunkFolder::default();
        let chunks = [
            format!(r#"{{"choices":[{{"index":{idx},"delta":{{"content":"x","tool_calls":[{{"index":{idx},"id":"c","function":{{"name":"read_file","arguments":"{{}}"}}}}]}}}}]}}"#),
            format!(r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop","usage":{{"prompt_tokens":{a}}}}}]}}"#),
            format!(r#"{{"choices":[],"usage":{{"prompt_tokens":{a},"completion_tokens":{b},"prompt_tokens_details":{{"cached_tokens":{c}}}}}}}"#),
            "[DONE]".to_string(),
        ];
        let mut result = Ok(());
        for ch in &chunks {
            result = f.push(ch, &sink);
            if result.is_err() { break; }
        }
        match result {
            Ok(()) => check(f.finish(u64::MAX))?,
            Err(e) => prop_assert_eq!(e.kind, ProviderErrorKind::BadResponse),
        }
    }

    #[test]
    fn anthropic_events_with_extreme_numbers(a in extreme(), b in extreme(), c in extreme(), d in extreme(), idx in extreme()) {
        let sink = |_: StreamEvent| {};
        let mut f = EventFolder::default();
        let events = [
            format!(r#"{{"type":"message_start","message":{{"usage":{{"input_tokens":{a},"cache_creation_input_tokens":{b},"cache_read_input_tokens":{c},"output_tokens":{d}}}}}}}"#),
            format!(r#"{{"type":"content_block_start","index":{idx},"content_block":{{"type":"tool_use","id":"t","name":"read_file"}}}}"#),
            format!(r#"{{"type":"content_block_delta","index":{idx},"delta":{{"type":"input_json_delta","partial_json":"{{}}"}}}}"#),
            format!(r#"{{"type":"content_block_stop","index":{idx}}}"#),
            format!(r#"{{"type":"message_delta","usage":{{"output_tokens":{b},"input_tokens":{d}}}}}"#),
            r#"{"type":"message_stop"}"#.to_string(),
        ];
        let mut result = Ok(());
        for ev in &events {
            result = f.push(ev, &sink);
            if result.is_err() { break; }
        }
        match result {
            Ok(()) => check(f.finish(u64::MAX))?,
            Err(e) => prop_assert_eq!(e.kind, ProviderErrorKind::BadResponse),
        }
    }

    #[test]
    fn scripted_replies_with_extreme_numbers(a in any::<u64>(), b in any::<u64>(), delay in prop_oneof![Just(u64::MAX), 0u64..2, 600_001u64..u64::MAX]) {
        let text = format!(r#"{{"responses":[{{"text":"x","usage":{{"input_tokens":{a},"output_tokens":{b}}},"delay_ms":{delay}}}]}}"#);
        let script: Script = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let p = ScriptedProvider::new("scripted", script, std::path::Path::new("/ws"), None);
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let req = ModelRequest { system: String::new(), messages: vec![], tools: vec![], max_output_tokens: 1, purpose: CallPurpose::Main };
        let sink = |_: StreamEvent| {};
        let r = rt.block_on(p.call(&req, &sink));
        if delay > 600_000 || a > MAX_CALL_TOKENS || b > MAX_CALL_TOKENS {
            prop_assert_eq!(r.map(|_| ()).map_err(|e| e.kind), Err(ProviderErrorKind::BadResponse));
        } else {
            check(r)?;
        }
    }
}
