"""The Textual picker (SPEC L16); thin: it searches through the service and picks."""
