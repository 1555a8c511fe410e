"""Reading the web from the host: FetchURL (SSRF-safe, HTML as markdown) and Moonshot's built-in web search."""
