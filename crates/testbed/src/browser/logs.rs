//! What a page did, from Chromium's own records: its console messages (from Chromium's log on
//! standard error) and the network requests it started (from the network log).

use super::BrowserError;

/// The page's console messages among Chromium's log lines, which look like
/// `[pid:tid:time:INFO:CONSOLE:1] "message", source: file:///page.html (1)`.
pub(super) fn console_messages(stderr: &str) -> Vec<String> {
    const BROWSER_OWN: [&str; 4] = [
        "chrome://",
        "chrome-untrusted://",
        "devtools://",
        "chrome-extension://",
    ];
    stderr
        .lines()
        .filter(|line| line.contains(":CONSOLE") || line.contains("Uncaught"))
        .filter(|line| {
            let source = line.rsplit_once("source: ").map_or("", |(_, s)| s);
            !BROWSER_OWN.iter().any(|own| source.starts_with(own))
        })
        .map(|line| line.split_once("] ").map_or(line, |(_, m)| m).to_string())
        .collect()
}

/// The URLs of the network requests a page (a `file:` document) started, from Chromium's
/// network log; the browser's own requests are left out.
pub(super) fn page_fetches(log: &str) -> Result<Vec<String>, BrowserError> {
    // A log cut short (Chromium killed) lacks its closing brackets.
    let parsed: serde_json::Value = serde_json::from_str(log)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", log.trim_end().trim_end_matches(','))))
        .map_err(|e| BrowserError::Measure(format!("Chromium's network log: {e}")))?;
    let start_job = parsed
        .pointer("/constants/logEventTypes/URL_REQUEST_START_JOB")
        .and_then(serde_json::Value::as_i64)
        .ok_or_else(|| {
            BrowserError::Measure("the network log names no URL_REQUEST_START_JOB".into())
        })?;
    let events = parsed
        .get("events")
        .and_then(serde_json::Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut urls = Vec::new();
    for event in events {
        if event.get("type").and_then(serde_json::Value::as_i64) != Some(start_job) {
            continue;
        }
        let param = |key: &str| {
            event
                .pointer(&format!("/params/{key}"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
        };
        let from_page = param("network_isolation_key").contains("file://")
            || param("initiator").starts_with("file://");
        let url = param("url");
        if from_page && !url.starts_with("file:") && !url.starts_with("data:") {
            urls.push(url.to_string());
        }
    }
    Ok(urls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_lines_of_the_page_are_kept_and_the_browser_s_own_left_out() {
        let stderr = "\
[1:1:1123/202527.366321:ERROR:dbus/bus.cc:405] Failed to connect to the bus
[2:2:1123/202539.277063:INFO:CONSOLE:574] \"Slow network is detected.\", source: chrome://resources/x.js (574)
[3:3:1123/202549.604287:INFO:CONSOLE:1] \"plain log\", source: file:///tmp/a%20b.html (1)
[3:3:1123/202549.605148:INFO:CONSOLE:1] \"Uncaught Error: boom\", source: file:///tmp/a.html (1)
";
        assert_eq!(
            console_messages(stderr),
            [
                "\"plain log\", source: file:///tmp/a%20b.html (1)",
                "\"Uncaught Error: boom\", source: file:///tmp/a.html (1)"
            ]
        );
    }
}
