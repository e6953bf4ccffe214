/** The dashboard page at `GET /`: plain HTML, CSS and JS served by the process, no CDN. */
export const page = `<!doctype html><title>Toolvisor</title>`
