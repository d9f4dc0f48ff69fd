"""Real-looking configuration files of each agent, as a person's HOME holds them: with
comments where the agent allows them, unrelated settings and other MCP servers."""

from __future__ import annotations

from pathlib import Path

USER_FILES: dict[str, str] = {
    ".claude.json": """{
  "numStartups": 41,
  "theme": "dark",
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}
    }
  },
  "projects": {
    "/home/dev/src/shop": {"allowedTools": [], "hasTrustDialogAccepted": true}
  }
}
""",
    ".claude/settings.json": """{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "model": "opus",
  "permissions": {
    "allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
    "deny": ["Read(./.env)"]
  },
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Edit|Write",
        "hooks": [{"type": "command", "command": "npx prettier --write \\"$CLAUDE_FILE\\""}]
      }
    ]
  }
}
""",
    ".codex/config.toml": """# Codex CLI settings (see docs/config.md)
model = "gpt-5-codex"
approval_policy = "on-request"   # ask before leaving the sandbox

[mcp_servers.docs]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]

[mcp_servers.docs.env]
DEFAULT_MINIMUM_TOKENS = "10000"

# profiles for quick switching
[profiles.fast]
model = "gpt-5-mini"
""",
    ".gemini/settings.json": """{
  // Gemini CLI user settings
  "ui": {"theme": "GitHub"},
  "general": {"vimMode": true},
  "mcpServers": {
    /* the team's issue tracker */
    "linear": {"httpUrl": "https://mcp.linear.app/mcp"},
  },
}
""",
    ".qwen/settings.json": """{
  // Qwen Code
  "model": {"name": "qwen3-coder-plus"},
  "hooks": {
    "PreToolUse": [
      {"matcher": "WriteFile", "hooks": [{"type": "command", "command": "./check.sh"}]}
    ]
  }
}
""",
    ".cursor/mcp.json": """{
  "mcpServers": {
    "postgres": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/shop"]
    }
  }
}
""",
    ".config/opencode/opencode.jsonc": """{
  "$schema": "https://opencode.ai/config.json",
  // my model
  "model": "anthropic/claude-sonnet-4-5",
  "mcp": {
    "sentry": {"type": "remote", "url": "https://mcp.sentry.dev/mcp", "enabled": true},
  },
}
""",
    ".copilot/mcp-config.json": """{
  "mcpServers": {
    "playwright": {
      "type": "local",
      "command": "npx",
      "args": ["@playwright/mcp@latest"],
      "tools": ["*"]
    }
  }
}
""",
    ".cline/data/settings/cline_mcp_settings.json": """{
  "mcpServers": {
    "brave-search": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-brave-search"],
      "env": {"BRAVE_API_KEY": "${BRAVE_API_KEY}"},
      "disabled": false,
      "autoApprove": []
    }
  }
}
""",
}

# Which file holds each agent's MCP server entry (user-wide), and under which keys.
MCP_ENTRY: dict[str, tuple[str, tuple[str, ...]]] = {
    "claude-code": (".claude.json", ("mcpServers", "convodex")),
    "codex": (".codex/config.toml", ("mcp_servers", "convodex")),
    "gemini": (".gemini/settings.json", ("mcpServers", "convodex")),
    "qwen": (".qwen/settings.json", ("mcpServers", "convodex")),
    "cursor": (".cursor/mcp.json", ("mcpServers", "convodex")),
    "opencode": (".config/opencode/opencode.jsonc", ("mcp", "convodex")),
    "copilot": (".copilot/mcp-config.json", ("mcpServers", "convodex")),
    "cline": (".cline/data/settings/cline_mcp_settings.json", ("mcpServers", "convodex")),
}
# The agents with a recall hook: file, the event's array.
HOOK_ENTRY: dict[str, tuple[str, tuple[str, ...]]] = {
    "claude-code": (".claude/settings.json", ("hooks", "UserPromptSubmit")),
    "gemini": (".gemini/settings.json", ("hooks", "BeforeAgent")),
    "qwen": (".qwen/settings.json", ("hooks", "UserPromptSubmit")),
}


def fill(home: Path) -> dict[str, bytes]:
    """Write every agent's files under ``home``; returns their bytes by relative path."""
    out = {}
    for relative, text in USER_FILES.items():
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
        out[relative] = text.encode("utf-8")
    return out
