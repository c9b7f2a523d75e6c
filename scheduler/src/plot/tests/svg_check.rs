//! Test helpers: parse a rendered SVG as XML and count what it draws.

use roxmltree::Document;

/// A parsed SVG, with the queries the plot tests need.
pub(crate) struct Svg {
    text: String,
}

impl Svg {
    /// Parses `text`, failing the test when it is not well-formed XML with an `<svg>` root.
    pub(crate) fn parse(text: &str) -> Svg {
        let doc = Document::parse(text).unwrap_or_else(|e| panic!("SVG is not well-formed XML: {e}"));
        assert_eq!(
            doc.root_element().tag_name().name(),
            "svg",
            "root element is not <svg>"
        );
        Svg {
            text: text.to_string(),
        }
    }

    fn doc(&self) -> Document<'_> {
        Document::parse(&self.text).expect("parsed once already")
    }

    /// All text drawn, one entry per `<text>` element, trimmed.
    pub(crate) fn texts(&self) -> Vec<String> {
        self.doc()
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| n.text().unwrap_or("").trim().to_string())
            .collect()
    }

    /// Whether some `<text>` element reads exactly `s`.
    pub(crate) fn has_text(&self, s: &str) -> bool {
        self.texts().iter().any(|t| t == s)
    }

    /// Number of `tag` elements whose attribute `attr` equals `value`.
    pub(crate) fn count(&self, tag: &str, attr: &str, value: &str) -> usize {
        self.doc()
            .descendants()
            .filter(|n| n.has_tag_name(tag) && n.attribute(attr) == Some(value))
            .count()
    }

    /// Number of `tag` elements.
    pub(crate) fn count_tag(&self, tag: &str) -> usize {
        self.doc().descendants().filter(|n| n.has_tag_name(tag)).count()
    }
}

/// The SVG spelling of a plotters colour (`#RRGGBB`).
pub(crate) fn hex(c: plotters::style::RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}
