//! A screenshot decoded, and what is drawn in a region of it.

use std::collections::HashMap;
use std::path::Path;

use super::{io, BrowserError, Rect};

/// A decoded screenshot.
#[derive(Debug, Clone)]
pub struct Screenshot {
    width: u32,
    height: u32,
    rgb: Vec<[u8; 3]>,
}

/// What is drawn in a region of a screenshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ink {
    /// The pixels of the region (inside the picture).
    pub pixels: u64,
    /// Those of another colour than the region's commonest (its background).
    pub drawn: u64,
    /// The distinct colours, counted up to 1,000.
    pub colours: usize,
    /// The pixels of a vivid colour (a channel at least 64 from another), which text and axes
    /// in black and grey never are: a coloured curve or box.
    pub vivid: u64,
}

impl Ink {
    /// Whether nothing is drawn: under 1 % of the pixels differ from the background, or there
    /// is a single colour.
    pub fn is_blank(&self) -> bool {
        self.colours < 2 || self.drawn * 100 < self.pixels
    }
}

impl Screenshot {
    /// Reads a PNG screenshot (8-bit RGB or RGBA, as Chromium writes).
    pub fn open(path: &Path) -> Result<Screenshot, BrowserError> {
        let bad = |why: String| BrowserError::Screenshot {
            path: path.to_path_buf(),
            why,
        };
        let file = std::fs::File::open(path).map_err(|source| io(path, source))?;
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().map_err(|e| bad(e.to_string()))?;
        let size = reader
            .output_buffer_size()
            .ok_or_else(|| bad("an image too large to hold in memory".into()))?;
        let mut buffer = vec![0; size];
        let frame = reader
            .next_frame(&mut buffer)
            .map_err(|e| bad(e.to_string()))?;
        let channels = match frame.color_type {
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            other => return Err(bad(format!("colour type {other:?}"))),
        };
        let rgb = buffer[..frame.buffer_size()]
            .chunks_exact(channels)
            .map(|p| [p[0], p[1], p[2]])
            .collect();
        Ok(Screenshot {
            width: frame.width,
            height: frame.height,
            rgb,
        })
    }

    /// The picture's width and height in pixels.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// How many pixels of `rect` (the part of it inside the picture) are of the colour `rgb`,
    /// each channel within `tolerance`: how much of one curve's colour is seen.
    pub fn pixels_of(&self, rect: Rect, rgb: [u8; 3], tolerance: u8) -> u64 {
        let x_end = rect.x.saturating_add(rect.width).min(self.width);
        let y_end = rect.y.saturating_add(rect.height).min(self.height);
        let mut n = 0;
        for y in rect.y.min(y_end)..y_end {
            let row = (y * self.width) as usize;
            for x in rect.x.min(x_end)..x_end {
                let pixel = self.rgb[row + x as usize];
                if pixel
                    .iter()
                    .zip(rgb)
                    .all(|(&a, b)| a.abs_diff(b) <= tolerance)
                {
                    n += 1;
                }
            }
        }
        n
    }

    /// What is drawn in `rect` (the part of it inside the picture).
    pub fn ink(&self, rect: Rect) -> Ink {
        let x_end = rect.x.saturating_add(rect.width).min(self.width);
        let y_end = rect.y.saturating_add(rect.height).min(self.height);
        let mut counts: HashMap<[u8; 3], u64> = HashMap::new();
        let mut vivid = 0;
        for y in rect.y.min(y_end)..y_end {
            let row = (y * self.width) as usize;
            for x in rect.x.min(x_end)..x_end {
                let pixel = self.rgb[row + x as usize];
                *counts.entry(pixel).or_default() += 1;
                let (max, min) = (pixel.iter().max(), pixel.iter().min());
                if let (Some(max), Some(min)) = (max, min) {
                    if max - min >= 64 {
                        vivid += 1;
                    }
                }
            }
        }
        let pixels: u64 = counts.values().sum();
        let background = counts.values().copied().max().unwrap_or(0);
        Ink {
            pixels,
            drawn: pixels - background,
            colours: counts.len().min(1000),
            vivid,
        }
    }
}
