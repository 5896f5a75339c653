//! waist-router (skeleton)
