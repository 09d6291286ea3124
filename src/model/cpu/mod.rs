//! CPU f32 reference implementation of Piper's VITS, one function per stage.
