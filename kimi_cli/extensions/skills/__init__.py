"""Skills: folders with a SKILL.md whose name and description go into the prompt; the model reads the rest."""
