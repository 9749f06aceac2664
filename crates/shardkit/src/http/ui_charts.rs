//! Horizontal bar charts of a link's top values (referrers, countries, browsers, OS,
//! devices) as inline SVG: no script, no outside file, and a `viewBox` so they
//! shrink to a phone's width. Each bar is a `<g class="bar">` with `data-value` and
//! `data-clicks`, and shows both as text, so people and tests read the same numbers.

use super::pages::escape;
use std::fmt::Write;

/// Bars shown per chart; the rest are summed into one `… more` line below it.
pub const BARS: usize = 8;

/// The most characters of a label drawn at their natural width across the chart (12
/// px type, about 6.6 px a character, in 320 px); longer ones are narrowed to fit.
const LABEL_CHARS: usize = 46;

/// The chart `id` titled `title` of `values` (most first), or a line saying there
/// are none yet.
pub fn bars(id: &str, title: &str, values: &[(String, u64)]) -> String {
    let mut html = format!("<section class=\"stat\"><h3>{}</h3>", escape(title));
    if values.is_empty() {
        let _ = write!(
            html,
            "<p class=\"muted\" id=\"{id}-none\">No clicks yet.</p></section>"
        );
        return html;
    }
    let shown = &values[..values.len().min(BARS)];
    let max = shown.iter().map(|v| v.1).max().unwrap_or(1).max(1);
    // Each value on a line of its own above its bar, across the chart's whole width,
    // so a label such as `news.ycombinator.com` is never cut; one too long even for
    // that (a host name may have 253 characters) is drawn narrower, every character
    // kept (`textLength`), never clipped.
    let (width, row, count_w) = (320u64, 34u64, 44u64);
    let bar_room = width - count_w;
    let height = row * shown.len() as u64;
    let _ = write!(
        html,
        "<svg class=\"chart bars\" id=\"{id}\" role=\"img\" aria-label=\"{t}\" viewBox=\"0 0 {width} {height}\" width=\"100%\">",
        t = escape(title)
    );
    for (i, (value, n)) in shown.iter().enumerate() {
        let y = row * i as u64;
        let w = (bar_room * n / max).max(1);
        let v = escape(value);
        let fit = if value.chars().count() > LABEL_CHARS {
            format!(" textLength=\"{width}\" lengthAdjust=\"spacingAndGlyphs\"")
        } else {
            String::new()
        };
        let _ = write!(
            html,
            "<g class=\"bar\" data-value=\"{v}\" data-clicks=\"{n}\"><title>{v}: {n}</title>\
             <text class=\"label\" x=\"0\" y=\"{ty}\" font-size=\"12\"{fit}>{v}</text>\
             <rect x=\"0\" y=\"{ry}\" width=\"{w}\" height=\"{rh}\"></rect>\
             <text class=\"count\" x=\"{cx}\" y=\"{cy}\" font-size=\"12\">{n}</text></g>",
            ty = y + 12,
            ry = y + 16,
            rh = row - 22,
            cx = w + 4,
            cy = y + 26,
        );
    }
    html.push_str("</svg>");
    let rest: u64 = values[shown.len()..].iter().map(|v| v.1).sum();
    if rest > 0 {
        let _ = write!(
            html,
            "<p class=\"muted\">{} more values: {rest} clicks</p>",
            values.len() - shown.len()
        );
    }
    html.push_str("</section>");
    html
}

#[cfg(test)]
mod tests {
    #[test]
    fn bars_carry_their_numbers_and_escape_values() {
        let svg = super::bars(
            "chart-referrer",
            "Referrers",
            &[("a<b".into(), 3), ("direct".into(), 1)],
        );
        assert_eq!(svg.matches("class=\"bar\"").count(), 2);
        assert!(
            svg.contains("data-value=\"a&lt;b\" data-clicks=\"3\""),
            "{svg}"
        );
        assert!(super::bars("x", "X", &[]).contains("No clicks yet"));
        // Labels are whole: a long host name as it is, a longer one narrowed, not cut.
        let long = "a".repeat(240) + ".example";
        let svg = super::bars(
            "chart-referrer",
            "Referrers",
            &[("news.ycombinator.com".into(), 2), (long.clone(), 1)],
        );
        assert!(svg.contains(">news.ycombinator.com</text>"), "{svg}");
        assert!(svg.contains(&format!("lengthAdjust=\"spacingAndGlyphs\">{long}</text>")));
        assert!(!svg.contains('…'));
    }
}
